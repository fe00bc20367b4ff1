package loop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/loop"
	"github.com/hgate/hgate/spend"
)

// stubFor points the real CLI name at a model stub scripted with turns, as a user's
// environment and codex's config.toml would point it at its provider: the loop's gateway
// reads where that is and stands in between.
func stubFor(t *testing.T, name string, turns ...modelstub.Turn) *modelstub.Server {
	t.Helper()
	modelstub.NeedCLI(t, name)
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENAI_API_KEY", "OPENAI_BASE_URL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	if name == "claude" {
		s := modelstub.Anthropic(t, turns...)
		t.Setenv("ANTHROPIC_BASE_URL", s.URL)
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
		t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
		t.Setenv("IS_SANDBOX", "1")
		return s
	}
	s := modelstub.OpenAI(t, turns...)
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := "model = \"gpt-5\"\nmodel_provider = \"hgatestub\"\n[model_providers.hgatestub]\nname = \"hgatestub\"\nbase_url = \"" +
		s.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"HGATE_STUB_KEY\"\n"
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HGATE_STUB_KEY", "sk-stub")
	return s
}

// heldKey is the key the stub must see: the gateway's, never the placeholder.
func heldKey(name string, r modelstub.Request) bool {
	if name == "claude" {
		return r.Header.Get("X-Api-Key") == "sk-ant-stub"
	}
	return r.Header.Get("Authorization") == "Bearer sk-stub"
}

// runStubLoop runs the loop in r's repository (unsandboxed where there is no sandbox).
func runStubLoop(t *testing.T, r *gittest.Repo, resume bool, edit func(*loop.Options)) (*loop.Summary, string, error) {
	t.Helper()
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lc := env.Config.Loop
	if _, err := sandbox.Available(); err != nil {
		lc.Sandbox.Enabled = false
	}
	var log strings.Builder
	opts := loop.Options{Env: env, Loop: lc, Log: &log, Grace: time.Second, Resume: resume}
	if edit != nil {
		edit(&opts)
	}
	s, err := loop.Run(context.Background(), opts)
	return s, log.String(), err
}

// readSummary is the run's summary.json as written on disk.
func readSummary(t *testing.T, r *gittest.Repo, id string) loop.Summary {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(r.Dir, "workspace", "runs", id, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s loop.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGatewayMetersTheAgent: the real claude and codex run one iteration through the
// loop's gateway, streaming: the iteration's spend is the gateway's count, which equals
// the stub's (its tokens for every request it answered), the CLI's own figure kept beside
// it; the stub saw the held key on every request; summary.json's telemetry counts the
// attempt's requests.
func TestGatewayMetersTheAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			stub := stubFor(t, name, modelstub.Turn{Command: "cp best.sh agent.sh"}, modelstub.Turn{Text: "done"})
			r := gittest.New(t)
			r.WriteFiles(stubFiles(name, "  iterations: 1\n  repair_attempts: 0\n"))
			commitAndPrepare(t, r)
			s, log, err := runStubLoop(t, r, false, nil)
			if err != nil {
				t.Fatalf("loop: %v\n%s", err, log)
			}
			sum := readSummary(t, r, s.RunID)
			it := sum.Iterations[0]
			reqs := stub.Requests()
			want := spend.Tokens{Input: int64(len(reqs)) * modelstub.Usage.Input, Output: int64(len(reqs)) * modelstub.Usage.Output}
			if it.Outcome != loop.OutcomeKept || !it.Metered || it.Tokens == nil || *it.Tokens != want || it.CostUSD == nil || *it.CostUSD <= 0 {
				t.Fatalf("iteration %s (agent %s %s), metered %v, tokens %+v, usd %v; the stub answered %d requests: want %+v\n%s",
					it.Outcome, it.Agent, it.AgentDetail, it.Metered, it.Tokens, it.CostUSD, len(reqs), want, log)
			}
			if it.CLITokens == nil || *it.CLITokens != want || it.SpendDisagreement != "" {
				t.Fatalf("the CLI's own figure beside the gateway's: tokens %+v, disagreement %q; want %+v", it.CLITokens, it.SpendDisagreement, want)
			}
			g := sum.Gateway
			if g == nil || g.Phases["attempt"].Requests != len(reqs) || g.Total.Tokens != want || g.Total.Open != 0 || g.Total.Refused != 0 {
				t.Fatalf("summary.json's gateway: %+v; the stub answered %d requests", g, len(reqs))
			}
			for i, q := range reqs {
				if !heldKey(name, q) {
					t.Fatalf("request %d reached the stub without the held key: %v", i+1, q.Header)
				}
			}
		})
	}
}

// TestGatewayHoldsTheKey: the agent's own commands see the placeholder in the key's
// variable, never the key the gateway holds (the attempt's agent.sh, written by the
// model's command and rejected by the gate, is read from its attempt ref).
func TestGatewayHoldsTheKey(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			stubFor(t, name, modelstub.Turn{Command: "printenv ANTHROPIC_API_KEY HGATE_STUB_KEY > agent.sh; true"}, modelstub.Turn{Text: "done"})
			r := gittest.New(t)
			r.WriteFiles(stubFiles(name, "  iterations: 1\n  repair_attempts: 0\n"))
			commitAndPrepare(t, r)
			s, log, err := runStubLoop(t, r, false, nil)
			if err != nil {
				t.Fatalf("loop: %v\n%s", err, log)
			}
			it := s.Iterations[0]
			if it.AttemptRef == "" {
				t.Fatalf("no attempt ref: outcome %s\n%s", it.Outcome, log)
			}
			seen := r.Git("show", it.AttemptRef+":agent.sh")
			if strings.Contains(seen, "sk-") || !strings.Contains(seen, agentcli.KeyPlaceholder) {
				t.Fatalf("the agent's commands saw %q", seen)
			}
		})
	}
}

// TestGatewayBudgetSetsAside: with a token budget below the attempt's second model
// request, the gateway refuses it before it reaches the stub (the stub saw one request),
// the CLI exits, the attempt is set aside under its attempt ref (not gated: no verdict,
// no gate.json) and HEAD's agent.sh is back, and the run stops on the budget with the
// figures; a resume with a larger budget goes on to the next iteration.
func TestGatewayBudgetSetsAside(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			stub := stubFor(t, name, modelstub.Turn{Command: "echo 'exit 1' > agent.sh"}, modelstub.Turn{Text: "done"})
			r := gittest.New(t)
			r.WriteFiles(stubFiles(name, "  iterations: 2\n  repair_attempts: 0\n  budget_tokens: 1000\n"))
			commitAndPrepare(t, r)
			s, log, err := runStubLoop(t, r, false, nil)
			if err != nil {
				t.Fatalf("loop: %v\n%s", err, log)
			}
			if n := len(stub.Requests()); n != 1 {
				t.Fatalf("%d requests reached the stub, want 1 (none after the budget)\n%s", n, log)
			}
			sum := readSummary(t, r, s.RunID)
			if len(sum.Iterations) == 0 {
				t.Fatalf("no iteration: stopped %s (%s)\n%s", sum.StopReason, sum.StopDetail, log)
			}
			it := sum.Iterations[0]
			if len(sum.Iterations) != 1 || it.Outcome != loop.OutcomeSetAside || it.Verdict != nil || it.Agent == loop.AgentOK ||
				!strings.Contains(it.BudgetCut, "1,200 tokens spent of the 1,000-token budget") {
				t.Fatalf("iterations %d; the first: outcome %s, verdict %v, agent %s, budget_cut %q\n%s", len(sum.Iterations), it.Outcome, it.Verdict, it.Agent, it.BudgetCut, log)
			}
			if sum.StopReason != loop.StopBudget || !strings.Contains(sum.StopDetail, "set aside") || sum.Gateway.Total.Budget != 1 {
				t.Fatalf("stopped %s (%s); gateway %+v", sum.StopReason, sum.StopDetail, sum.Gateway)
			}
			if _, err := os.Stat(filepath.Join(r.Dir, "workspace", "runs", s.RunID, "iterations", "1", "gate.json")); err == nil {
				t.Fatal("the set-aside attempt was gated")
			}
			if got := r.Git("show", it.AttemptRef+":agent.sh"); strings.TrimSpace(got) != "exit 1" {
				t.Fatalf("the attempt ref %q holds agent.sh %q", it.AttemptRef, got)
			}
			if data, _ := os.ReadFile(filepath.Join(r.Dir, "agent.sh")); strings.Contains(string(data), "exit 1") {
				t.Fatal("the worktree still holds the set-aside attempt")
			}
			// A larger budget: the run goes on with its second iteration.
			s2, log2, err := runStubLoop(t, r, true, func(o *loop.Options) { o.Loop.BudgetTokens = 1 << 30 })
			if err != nil {
				t.Fatalf("resume: %v\n%s", err, log2)
			}
			if len(s2.Iterations) != 2 || s2.Iterations[1].BudgetCut != "" || len(stub.Requests()) < 2 {
				t.Fatalf("the resume with a larger budget: %d iterations, %d requests at the stub\n%s", len(s2.Iterations), len(stub.Requests()), log2)
			}
		})
	}
}

// TestGatewayKilledMidStream: hgate is killed (SIGKILL, at the fault point after the
// first usage event of a stream was journaled, its end not seen); the resumed run counts
// the attempt's spend up to that event, marked open (an upper bound), and nothing
// listens on the killed run's gateway port any more.
func TestGatewayKilledMidStream(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude")
	}
	stub := stubFor(t, "claude", modelstub.Turn{Command: "cp best.sh agent.sh"}, modelstub.Turn{Text: "done"})
	r := gittest.New(t)
	r.WriteFiles(stubFiles("claude", "  iterations: 1\n  repair_attempts: 0\n"))
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
	port := gatewayPortOf(string(out))
	var j struct {
		Metering *struct {
			Count struct {
				Tokens   spend.Tokens `json:"tokens"`
				Requests int          `json:"requests"`
				Open     int          `json:"open"`
			} `json:"count"`
		} `json:"metering"`
	}
	runs, _ := filepath.Glob(filepath.Join(r.Dir, "workspace", "runs", "*", "journal.json"))
	if len(runs) != 1 {
		t.Fatalf("journals: %v", runs)
	}
	data, _ := os.ReadFile(runs[0])
	if err := json.Unmarshal(data, &j); err != nil || j.Metering == nil || j.Metering.Count.Open != 1 || j.Metering.Count.Tokens.Input != modelstub.Usage.Input {
		t.Fatalf("the journal at the kill holds no open count of the stream: %v\n%s", err, data)
	}
	if port == "" {
		t.Fatalf("the loop's log names no gateway port:\n%s", out)
	}
	{
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
			c.Close()
			t.Fatalf("something still listens on the killed run's gateway port %s", port)
		}
	}
	s, log, err := runStubLoop(t, r, true, nil)
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, log)
	}
	it := s.Iterations[0]
	if !it.SpendOpen || !it.Metered || it.Tokens == nil || it.Tokens.Input != modelstub.Usage.Input || it.Agent != loop.AgentInterrupted {
		t.Fatalf("the resumed iteration: open %v, metered %v, tokens %+v, agent %s\n%s", it.SpendOpen, it.Metered, it.Tokens, it.Agent, log)
	}
	if !heldKey("claude", stub.Requests()[0]) {
		t.Fatal("the stub did not see the held key")
	}
}

// gatewayPortOf is the port the loop's log names for its gateway ("" when it says none).
func gatewayPortOf(log string) string {
	_, rest, ok := strings.Cut(log, "model gateway on 127.0.0.1:")
	if !ok {
		return ""
	}
	var port int
	if _, err := fmt.Sscanf(rest, "%d", &port); err != nil {
		return ""
	}
	return fmt.Sprint(port)
}

// TestGatewayInsideNetworkModel: with loop.sandbox.network: model the real claude and codex
// run in a network namespace with loopback only, and still reach their model: through the
// gateway's listener that the shim binds inside the namespace, at the port of the URL the
// session was given. The stub, on the host's loopback, is out of the agent's reach; every
// request it answered came through the gateway and is metered.
func TestGatewayInsideNetworkModel(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			stub := stubFor(t, name, modelstub.Turn{Command: "cp best.sh agent.sh"}, modelstub.Turn{Text: "done"})
			r := gittest.New(t)
			r.WriteFiles(stubFiles(name, "  iterations: 1\n  repair_attempts: 0\n  sandbox:\n    network: model\n"))
			commitAndPrepare(t, r)
			s, log, err := runStubLoop(t, r, false, nil)
			if err != nil {
				t.Fatalf("loop: %v\n%s", err, log)
			}
			if !strings.Contains(log, "the agent's network: model") {
				t.Fatalf("the run did not say the agent's network is model:\n%s", log)
			}
			it := readSummary(t, r, s.RunID).Iterations[0]
			reqs := stub.Requests()
			want := spend.Tokens{Input: int64(len(reqs)) * modelstub.Usage.Input, Output: int64(len(reqs)) * modelstub.Usage.Output}
			if len(reqs) < 2 || it.Outcome != loop.OutcomeKept || !it.Metered || it.Tokens == nil || *it.Tokens != want {
				t.Fatalf("iteration %s (agent %s %s), metered %v, tokens %+v; the stub answered %d requests\n%s",
					it.Outcome, it.Agent, it.AgentDetail, it.Metered, it.Tokens, len(reqs), log)
			}
			if out, err := exec.Command("git", "-C", r.Dir, "show", "HEAD:agent.sh").Output(); err != nil || !strings.Contains(string(out), "solved $1") || strings.Contains(string(out), "case") {
				t.Fatalf("HEAD's agent.sh is not the model's change: %q %v", out, err)
			}
		})
	}
}
