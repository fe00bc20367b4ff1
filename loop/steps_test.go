package loop

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/sandbox"
)

// The loop's phases, each step tested on its own over the dimensions that change it:
// fresh (hgate runs the phase), resumed (hgate was killed in it) and repair (the gate
// rejected the attempt and the agent repairs it). Each case opens a run on a repository
// whose tasks b1..b4 pass when agent.sh solves them (b1 at baseline), puts the journal
// and the worktree where the phase starts, runs that one step and reads the journal, the
// iteration and the repository after it.

// solve and regress are what the work in the worktree may be: b1 and b2 solved (better
// than the baseline), or none (worse).
const (
	solve   = "case $1 in b1|b2) echo \"solved $1\" ;; esac\n"
	regress = "echo no\n"
)

// stepRepo is the repository a step's run opens, prepared: made once per test binary
// (gittest.Template) and copied for each case.
func stepRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	return gittest.Template(t, "step", func(repo *gittest.Repo) {
		repo.WriteFiles(map[string]string{
			".gitignore": "/workspace/\n",
			"PROGRAM.md": "# Program\n",
			"hgate.yaml": `allow: [agent.sh]
benchmark:
  tasks: {file: tasks.txt}
  run: ["sh", "check.sh", "{task}"]
  concurrency: 2
split: {test_fraction: 0.5}
loop:
  agent: ["sh", "bot.sh"]
  attempt_timeout: 5m
  repair_attempts: 1
`,
			"tasks.txt": "b1\nb2\nb3\nb4\n",
			// agent.sh read by the checking shell itself (.), not by a second one.
			"check.sh": "out=$(. ./agent.sh)\n[ \"$out\" = \"solved $1\" ]\n",
			"agent.sh": "case $1 in b1) echo \"solved $1\" ;; esac\n",
			"bot.sh":   "printf '%s' \"$STEP_WORK\" > agent.sh\n",
		})
		repo.Commit("init")
		if _, err := gate.Prepare(context.Background(), stepEnv(t, repo)); err != nil {
			t.Fatal(err)
		}
	})
}

// stepEnv opens the gate's Env over repo.
func stepEnv(t *testing.T, repo *gittest.Repo) *gate.Env {
	t.Helper()
	g, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := gate.LoadConfig(g, config.FileName, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return &gate.Env{Config: cfg, Repo: g}
}

// stepRun opens a run (as Run does, up to its first iteration) and begins iteration 1.
// The agent, when a step runs it, writes $STEP_WORK to agent.sh.
func stepRun(t *testing.T, agent []string) *runner {
	t.Helper()
	env := stepEnv(t, stepRepo(t))
	lc := env.Config.Loop
	if _, err := sandbox.Available(); err != nil {
		lc.Sandbox.Enabled = false
	}
	r, done, err := start(context.Background(), Options{Env: env, Loop: lc, Log: &bytes.Buffer{}, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(done)
	// Set after the start, which refuses an agent whose program it cannot find: as if the
	// program went away while the run went on.
	if agent != nil {
		r.cfg.Agent = agent
	}
	if err := r.begin(); err != nil {
		t.Fatal(err)
	}
	return r
}

// work writes agent.sh in the worktree as an agent would.
func work(t *testing.T, r *runner, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.repo.Root(), "agent.sh"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// runStep runs the step of phase p, the journal put there first.
func runStep(t *testing.T, r *runner, p phase, resumed bool) (*step, bool) {
	t.Helper()
	if err := r.phase(p); err != nil {
		t.Fatal(err)
	}
	st := &step{r: r, ctx: context.Background(), n: r.j.Next, it: r.j.Current, resumed: resumed, start: time.Now()}
	f, ok := stepOf(p)
	if !ok {
		t.Fatalf("no step for phase %s", p)
	}
	done, err := f(st)
	if err != nil {
		t.Fatalf("%s step: %v", p, err)
	}
	return st, done
}

func TestAgentStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		agent   []string
		resumed bool
		tag     string // the journal's agent tag: set once the agent was about to start
		repair  int
		want    phase
		outcome AgentOutcome
		result  Outcome
	}{
		{name: "fresh", want: phaseGate, outcome: AgentOK},
		{name: "repair", repair: 1, want: phaseGate, outcome: AgentOK},
		{name: "resumed", resumed: true, tag: "killed", want: phaseGate, outcome: AgentInterrupted},
		// Killed in the phase before its agent started (no tag): the agent runs now.
		{name: "resumed, not started", resumed: true, want: phaseGate, outcome: AgentOK},
		{name: "fresh, did not start", agent: []string{"/nonexistent/agent"}, want: phaseLearn, outcome: AgentCrashed, result: OutcomeUnchanged},
		{name: "repair, did not start", agent: []string{"/nonexistent/agent"}, repair: 1, want: phaseAttempt, outcome: AgentCrashed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("STEP_WORK", solve)
			r := stepRun(t, tc.agent)
			r.j.Repair = tc.repair
			if err := r.phase(phaseAgent); err != nil {
				t.Fatal(err)
			}
			r.j.AgentTag = tc.tag // what the killed hgate journaled in the phase
			st := &step{r: r, ctx: context.Background(), n: r.j.Next, it: r.j.Current, resumed: tc.resumed, start: time.Now()}
			done, err := st.agent()
			if err != nil {
				t.Fatal(err)
			}
			it := st.it
			if done || r.j.Phase != tc.want || it.Agent != tc.outcome || it.Outcome != tc.result || st.resumed {
				t.Fatalf("phase %q agent %q outcome %q (done %v, resumed %v), want %q %q %q", r.j.Phase, it.Agent, it.Outcome, done, st.resumed, tc.want, tc.outcome, tc.result)
			}
			if r.j.Refs != nil {
				t.Errorf("the agent's phase closed with its refs snapshot still in the journal")
			}
			data, _ := os.ReadFile(filepath.Join(r.repo.Root(), "agent.sh"))
			if ran := string(data) == solve; ran != (tc.outcome == AgentOK) {
				t.Errorf("agent.sh after the step: %q", data)
			}
		})
	}
}

func TestGateStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		work    string // "" = nothing changed
		resumed bool
		repair  int
		want    phase
		repairs int
		result  Outcome
	}{
		{name: "fresh, better", work: solve, want: phaseCommit},
		{name: "resumed, better", work: solve, resumed: true, want: phaseCommit},
		{name: "fresh, worse: repaired", work: regress, want: phaseAgent, repairs: 1},
		{name: "repair, worse: set aside", work: regress, repair: 1, want: phaseAttempt},
		{name: "fresh, unchanged", want: phaseLearn, result: OutcomeUnchanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := stepRun(t, nil)
			r.j.Refs, r.j.Repair = nil, tc.repair
			if tc.work != "" {
				work(t, r, tc.work)
			}
			st, _ := runStep(t, r, phaseGate, tc.resumed)
			it := st.it
			if r.j.Phase != tc.want || it.Repairs != tc.repairs || it.Outcome != tc.result {
				t.Fatalf("phase %q repairs %d outcome %q, want %q %d %q", r.j.Phase, it.Repairs, it.Outcome, tc.want, tc.repairs, tc.result)
			}
			if (tc.work != "") != (it.Verdict != nil) || tc.work != "" && r.j.LastReport == nil {
				t.Errorf("verdict %v, last report %v", it.Verdict, r.j.LastReport)
			}
			if tc.want == phaseCommit && r.j.CommitParent != r.j.PreHead {
				t.Errorf("commit parent %s, want HEAD %s", r.j.CommitParent, r.j.PreHead)
			}
			if tc.want == phaseAgent && r.j.Refs == nil {
				t.Errorf("the repair's phase opened without a refs snapshot")
			}
		})
	}
}

// TestKeptSteps: commit then record, fresh and resumed (hgate killed after the commit:
// the branch holds it already, and a second one is never made).
func TestKeptSteps(t *testing.T) {
	for _, resumed := range []bool{false, true} {
		r := stepRun(t, nil)
		r.j.Refs = nil
		work(t, r, solve)
		runStep(t, r, phaseGate, false)
		st, _ := runStep(t, r, phaseCommit, false)
		head := r.repo.Head
		h1, _, _ := head()
		if resumed {
			st, _ = runStep(t, r, phaseCommit, true)
			if h2, _, _ := head(); h2 != h1 {
				t.Fatalf("a resumed commit step committed again: %s after %s", h2, h1)
			}
		}
		if r.j.Phase != phaseRecord || st.it.Commit != h1.String() || h1.String() == r.j.PreHead {
			t.Fatalf("resumed %v: phase %q commit %q HEAD %s", resumed, r.j.Phase, st.it.Commit, h1)
		}
		st, _ = runStep(t, r, phaseRecord, resumed)
		if r.j.Phase != phaseLearn || st.it.Outcome != OutcomeKept || !st.it.NewBest {
			t.Fatalf("resumed %v: record: phase %q outcome %q new best %v", resumed, r.j.Phase, st.it.Outcome, st.it.NewBest)
		}
	}
}

// TestRejectedSteps: a rejected repair is kept under its attempt ref and the worktree put
// back to HEAD, fresh and resumed (the attempt kept already: the restore is what is left).
func TestRejectedSteps(t *testing.T) {
	for _, resumed := range []bool{false, true} {
		r := stepRun(t, nil)
		r.j.Refs, r.j.Repair = nil, 1
		work(t, r, regress)
		runStep(t, r, phaseGate, false)
		runStep(t, r, phaseAttempt, false)
		if resumed {
			runStep(t, r, phaseAttempt, true)
		}
		if r.j.Phase != phaseRestore && r.j.Phase != phaseLearn {
			t.Fatalf("resumed %v: after the attempt, phase %q", resumed, r.j.Phase)
		}
		if _, err := r.repo.Ref(r.attemptRef(1)); err != nil {
			t.Errorf("resumed %v: no attempt ref: %v", resumed, err)
		}
		if r.j.Phase == phaseRestore {
			runStep(t, r, phaseRestore, resumed)
		}
		data, _ := os.ReadFile(filepath.Join(r.repo.Root(), "agent.sh"))
		if r.j.Phase != phaseLearn || r.j.Current.Outcome != OutcomeRejected || string(data) == regress {
			t.Fatalf("resumed %v: phase %q outcome %q agent.sh %q", resumed, r.j.Phase, r.j.Current.Outcome, data)
		}
	}
}

// TestLearnStep: the iteration is closed, its counters moved by its outcome, for a kept
// new best, a rejected repair and a crash.
func TestLearnStep(t *testing.T) {
	for _, tc := range []struct {
		name             string
		outcome          Outcome
		newBest          bool
		agent            AgentOutcome
		repair           int
		sinceBest, crash int
	}{
		{"kept new best", OutcomeKept, true, AgentOK, 0, 0, 0},
		{"rejected repair", OutcomeRejected, false, AgentOK, 1, 1, 0},
		{"crashed", OutcomeUnchanged, false, AgentCrashed, 0, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := stepRun(t, nil)
			r.j.Refs, r.j.Repair = nil, tc.repair
			it := r.j.Current
			it.Outcome, it.NewBest, it.Agent, it.Repairs = tc.outcome, tc.newBest, tc.agent, tc.repair
			if tc.outcome == OutcomeKept {
				it.Commit = r.j.PreHead // learnings.md names the kept commit
			}
			_, done := runStep(t, r, phaseLearn, false)
			j := r.j
			if !done || j.Phase != phaseNone || j.Next != 2 || j.Current != nil || len(j.Iterations) != 1 {
				t.Fatalf("done %v phase %q next %d current %v iterations %d", done, j.Phase, j.Next, j.Current, len(j.Iterations))
			}
			if j.SinceBest != tc.sinceBest || j.Crashes != tc.crash || j.Iterations[0].Repairs != tc.repair {
				t.Errorf("since best %d crashes %d repairs %d, want %d %d %d", j.SinceBest, j.Crashes, j.Iterations[0].Repairs, tc.sinceBest, tc.crash, tc.repair)
			}
			if _, err := os.Stat(filepath.Join(r.dir, "summary.json")); err != nil {
				t.Errorf("no summary.json: %v", err)
			}
		})
	}
}
