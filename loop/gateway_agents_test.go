package loop_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/loop"
	"github.com/hgate/hgate/spend"
)

// TestGatewayBudgetSetsAsideAgents: with agents: 2 and a token budget below each agent's
// second model request, every agent whose request the gateway refused on the budget has
// its candidate set aside (under its attempt ref where it left one: the agent whose first
// request was answered did), never gated (no gate.json) nor merged
// (HEAD's agent.sh stays), the generation ends and the run stops on the budget with the
// figures; no request reached the stub after the budget was reached. A resume with a
// larger budget goes on with the next generation.
func TestGatewayBudgetSetsAsideAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			stub := stubFor(t, name, modelstub.Turn{Command: "echo 'exit 1' > agent.sh"}, modelstub.Turn{Text: "done"})
			r := gittest.New(t)
			r.WriteFiles(stubFiles(name, "  iterations: 4\n  repair_attempts: 0\n  agents: 2\n  budget_tokens: 1000\n"))
			commitAndPrepare(t, r)
			head := r.Git("rev-parse", "HEAD")
			s, log, err := runStubLoop(t, r, false, nil)
			if err != nil {
				t.Fatalf("loop: %v\n%s", err, log)
			}
			// Each agent's first request may start before the other's usage is counted;
			// none starts after: at most one request per agent reached the stub.
			if n := len(stub.Requests()); n < 1 || n > 2 {
				t.Fatalf("%d requests reached the stub, want 1 or 2 (none after the budget)\n%s", n, log)
			}
			sum := readSummary(t, r, s.RunID)
			cut, kept := 0, 0
			for _, it := range sum.Iterations {
				if it.BudgetCut == "" {
					continue
				}
				cut++
				if it.Outcome != loop.OutcomeSetAside || it.Verdict != nil ||
					!strings.Contains(it.BudgetCut, "tokens spent of the 1,000-token budget") {
					t.Fatalf("iteration %d: outcome %s, verdict %v, ref %q, budget_cut %q\n%s", it.Iteration, it.Outcome, it.Verdict, it.AttemptRef, it.BudgetCut, log)
				}
				if _, err := os.Stat(filepath.Join(r.Dir, "workspace", "runs", s.RunID, "iterations", strconv.Itoa(it.Iteration), "gate.json")); err == nil {
					t.Fatalf("iteration %d's set-aside candidate was gated", it.Iteration)
				}
				if it.AttemptRef == "" {
					continue // its first request was refused: it left nothing
				}
				kept++
				if got := r.Git("show", it.AttemptRef+":agent.sh"); strings.TrimSpace(got) != "exit 1" {
					t.Fatalf("the attempt ref %q holds agent.sh %q", it.AttemptRef, got)
				}
			}
			// The agent whose first request was answered ran its command, then was cut.
			if cut == 0 || kept == 0 || len(sum.Iterations) > 2 {
				t.Fatalf("%d iteration(s), %d cut by the budget, %d kept under a ref: want 1 or 2, at least one cut and kept\n%s", len(sum.Iterations), cut, kept, log)
			}
			if sum.StopReason != loop.StopBudget || !strings.Contains(sum.StopDetail, "tokens spent of the 1,000-token budget") {
				t.Fatalf("stopped %s (%s)\n%s", sum.StopReason, sum.StopDetail, log)
			}
			if got := r.Git("rev-parse", "HEAD"); got != head {
				t.Fatalf("HEAD moved from %s to %s: a set-aside candidate was merged", head, got)
			}
			if data, _ := os.ReadFile(filepath.Join(r.Dir, "agent.sh")); strings.Contains(string(data), "exit 1") {
				t.Fatal("the worktree holds a set-aside candidate")
			}
			// learnings.md names no empty attempt ref for an agent that left nothing.
			if data, _ := os.ReadFile(filepath.Join(r.Dir, "workspace", "learnings.md")); strings.Contains(string(data), "set aside in  and") {
				t.Fatalf("learnings.md names an empty attempt ref:\n%s", data)
			}
			// A larger budget: the run goes on with the next generation.
			s2, log2, err := runStubLoop(t, r, true, func(o *loop.Options) { o.Loop.BudgetTokens = 1 << 30 })
			if err != nil {
				t.Fatalf("resume: %v\n%s", err, log2)
			}
			if n := len(sum.Iterations); len(s2.Iterations) <= n || s2.Iterations[n].BudgetCut != "" {
				t.Fatalf("the resume with a larger budget: %d iterations after %d\n%s", len(s2.Iterations), n, log2)
			}
		})
	}
}

// TestGatewayKilledMidStreamAgents: with agents: 2, hgate is killed (SIGKILL) at the
// fault point after a stream's first usage event was journaled in its agent's entry;
// the resumed run counts that agent's spend up to that event, marked open (an upper
// bound), not the CLI's output alone.
func TestGatewayKilledMidStreamAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude")
	}
	stubFor(t, "claude", modelstub.Turn{Command: "cp best.sh agent.sh"}, modelstub.Turn{Text: "done"})
	r := gittest.New(t)
	r.WriteFiles(stubFiles("claude", "  iterations: 2\n  repair_attempts: 0\n  agents: 2\n"))
	commitAndPrepare(t, r)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(gittest.Env(), "HGATE_LOOP_CHILD="+r.Dir, "HGATE_LOOP_RESUME=0", fault.Env+"=loop-gateway-usage")
	out, err := cmd.CombinedOutput()
	if !killedAtPoint(err) {
		t.Fatalf("the loop was not killed at loop-gateway-usage: %v\n%s", err, out)
	}
	var j struct {
		Gen *struct {
			Agents []struct {
				Index    int `json:"index"`
				Metering *struct {
					Count struct {
						Tokens spend.Tokens `json:"tokens"`
						Open   int          `json:"open"`
					} `json:"count"`
				} `json:"metering"`
			} `json:"agents"`
		} `json:"generation"`
	}
	runs, _ := filepath.Glob(filepath.Join(r.Dir, "workspace", "runs", "*", "journal.json"))
	if len(runs) != 1 {
		t.Fatalf("journals: %v", runs)
	}
	data, _ := os.ReadFile(runs[0])
	if err := json.Unmarshal(data, &j); err != nil || j.Gen == nil {
		t.Fatalf("the journal at the kill holds no generation: %v\n%s", err, data)
	}
	open := 0
	for _, a := range j.Gen.Agents {
		if m := a.Metering; m != nil && m.Count.Open == 1 && m.Count.Tokens.Input == modelstub.Usage.Input {
			open = a.Index
		}
	}
	if open == 0 {
		t.Fatalf("no agent's entry in the journal holds an open count of its stream:\n%s", data)
	}
	s, log, err := runStubLoop(t, r, true, nil)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, log)
	}
	var it *loop.Iteration
	for i := range s.Iterations {
		if s.Iterations[i].AgentIndex == open {
			it = &s.Iterations[i]
		}
	}
	if it == nil || !it.SpendOpen || !it.Metered || it.Tokens == nil || it.Tokens.Input != modelstub.Usage.Input || it.Agent != loop.AgentInterrupted {
		t.Fatalf("agent %d's resumed iteration: %+v\n%s", open, it, log)
	}
}
