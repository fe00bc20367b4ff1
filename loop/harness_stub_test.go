package loop_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/harness"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/timescale"
	"github.com/hgate/hgate/loop"
)

// TestHarnessPhasesAgainstCLIs: the real claude and codex (as .ci/run installs them) run
// three iterations of the loop with the harness phases through their presets, in hgate's
// sandbox where there is one, each against a loopback stand-in of its model API that
// scripts every iteration's session:
//
//  1. the attempt fixes the tasks; its session, resumed, reflects (the answer written to
//     HGATE_ANSWER_FILE) and builds a skill and an MCP server, which hgate qualifies;
//  2. a fresh session is given both (claude loads the skill; the model's call of
//     mcp__good__lookup reaches the server through hgate-mcp's proxy, logged in
//     mcp_calls.jsonl), then builds a broken server (its self-test fails): sent back into
//     the same session once (the stub sees that session resumed, holding all its turns),
//     still failing, quarantined;
//  3. a fresh session is given the tools qualified in iteration 1 again, never the
//     quarantined one, which its prompt only counts.
//
// The verdicts are read from the registry (what hgate harness list --json prints), the run
// folder and the stub's record of the requests.
func TestHarnessPhasesAgainstCLIs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) { harnessScenario(t, name) })
	}
}

// The scripted sessions of harnessScenario, by iteration.
const (
	answerGood = `echo '{"kind":"mcp","name":"good"}' > "$HGATE_ANSWER_FILE"`
	buildGood  = `mkdir -p .hgate/harness/skills/finder .hgate/harness/mcp/good && printf -- '---\nname: finder\ndescription: Find where a symbol is defined.\n---\nUse grep.\n' > .hgate/harness/skills/finder/SKILL.md && cp server.sh .hgate/harness/mcp/good/ && echo '{"name": "good", "command": "sh", "args": [".hgate/harness/mcp/good/server.sh"], "self_test": true}' > .hgate/harness/mcp/good/mcp.json`
	answerMute = `echo '{"kind":"mcp","name":"mute"}' > "$HGATE_ANSWER_FILE"`
	// A server whose self-test fails; the repair changes it without fixing that.
	buildMute  = `mkdir -p .hgate/harness/mcp/mute && cp server.sh .hgate/harness/mcp/mute/ && echo '{"name": "mute", "command": "sh", "args": [".hgate/harness/mcp/mute/server.sh"], "self_test": ["sh", "-c", "exit 3"]}' > .hgate/harness/mcp/mute/mcp.json`
	repairMute = `echo '# tried' >> .hgate/harness/mcp/mute/server.sh`
)

func harnessScenario(t *testing.T, cli string) {
	modelstub.NeedCLI(t, cli)
	lookup := modelstub.Turn{Tool: "mcp__good__lookup", Input: map[string]any{"q": "secret words"}}
	script := func(s *modelstub.Server) {
		s.Script("- Iteration: 1 of 3", modelstub.Turn{Command: "cp best.sh agent.sh"}, modelstub.Turn{Text: "done"},
			modelstub.Turn{Command: answerGood}, modelstub.Turn{Text: "reflected"}, modelstub.Turn{Command: buildGood}, modelstub.Turn{Text: "built"})
		s.Script("- Iteration: 2 of 3", lookup, modelstub.Turn{Text: "done"},
			modelstub.Turn{Command: answerMute}, modelstub.Turn{Text: "reflected"}, modelstub.Turn{Command: buildMute}, modelstub.Turn{Text: "built"},
			modelstub.Turn{Command: repairMute}, modelstub.Turn{Text: "repaired"})
		s.Script("- Iteration: 3 of 3", lookup, modelstub.Turn{Text: "done"}, modelstub.Turn{Text: "nothing more"})
	}
	home, bin := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME"} {
		t.Setenv(k, "")
		os.Unsetenv(k) // unset, not empty: claude takes "" for a folder named ""
	}
	var stub *modelstub.Server
	switch cli {
	case "claude":
		stub = modelstub.Anthropic(t, modelstub.Turn{Text: "unscripted"})
		t.Setenv("ANTHROPIC_BASE_URL", stub.URL)
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
		t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
		t.Setenv("IS_SANDBOX", "1")
		// claude waits MCP_TIMEOUT ms (30 s unset) for an MCP server to start, here
		// hgate-mcp (this test binary): stretched by HGATE_TEST_TIMESCALE under load.
		if timescale.Factor() > 1 {
			t.Setenv("MCP_TIMEOUT", strconv.FormatInt(timescale.D(30*time.Second).Milliseconds(), 10))
		}
	case "codex":
		stub = modelstub.OpenAI(t, modelstub.Turn{Text: "unscripted"})
		// The user's own codex configuration: the provider (and so the login) the
		// activation's codex home must keep.
		codexProvider(t, home, stub.URL)
	}
	script(stub)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A copy, not a link: qualification's sandbox reads hgate-mcp's folder only.
	if err := copyExe(self, filepath.Join(bin, "hgate-mcp")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := harnessProject(t, cli)
	t.Chdir(r.Dir)
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lc := env.Config.Loop
	if _, err := sandbox.Available(); err != nil {
		t.Logf("no sandbox here (%v): the agent runs without it", err)
		lc.Sandbox.Enabled = false
	}
	var log bytes.Buffer
	s, err := loop.Run(context.Background(), loop.Options{Env: env, Loop: lc, Log: &log, Grace: time.Second})
	if err != nil {
		t.Fatalf("loop: %v\n%s", err, log.String())
	}
	if len(s.Iterations) != 3 {
		t.Fatalf("%d iterations, want 3\n%s", len(s.Iterations), log.String())
	}
	run := filepath.Join(r.Dir, "workspace", "runs", s.RunID)
	ids := map[string]bool{}
	for i, it := range s.Iterations {
		if it.SessionID == "" || ids[it.SessionID] {
			t.Fatalf("iteration %d's session %q: not a fresh session of its own", i+1, it.SessionID)
		}
		ids[it.SessionID] = true
		// Each session reached the stub as one conversation growing through its phases.
		for k, c := range stubSession(stub, it.SessionID) {
			if c.Turn != k {
				t.Fatalf("iteration %d: call %d of its session held %d assistant turns, want %d: not one session resumed", i+1, k+1, c.Turn, k)
			}
		}
	}

	// Iteration 1: both tools qualified.
	h1 := s.Iterations[0].Harness
	if h1 == nil || len(h1.Phases) != 2 || h1.Phases[0].Agent != loop.AgentOK || h1.Phases[1].Agent != loop.AgentOK ||
		h1.Reflection != `{"kind":"mcp","name":"good"}` || strings.Join(h1.Qualified, ",") != "mcp good,skill finder" {
		report, _ := os.ReadFile(filepath.Join(run, "iterations", "1", "qualification", "attempt_0", "qualification.json"))
		t.Fatalf("iteration 1's harness: %+v\n%s\nthe report:\n%s", h1, log.String(), report)
	}
	if n := len(stubSession(stub, s.Iterations[0].SessionID)); n != 6 {
		t.Fatalf("the stub saw %d calls of iteration 1's session, want 6 (attempt, reflect, build)", n)
	}

	// Iteration 2: given both; the call of the server went through hgate's proxy.
	it2 := stubSession(stub, s.Iterations[1].SessionID)
	prompt2, _ := os.ReadFile(filepath.Join(run, "iterations", "2", "prompt.txt"))
	if !bytes.Contains(prompt2, []byte("skill `finder`: Find where a symbol is defined.")) || !bytes.Contains(prompt2, []byte("MCP server `good`, tools: lookup")) {
		t.Fatalf("iteration 2's prompt does not name the tools:\n%s", prompt2)
	}
	if len(it2) < 2 || !slices.Contains(it2[0].Tools, "mcp__good__lookup") || !strings.Contains(it2[1].ToolResult, "found it") {
		stdout, _ := os.ReadFile(filepath.Join(run, "iterations", "2", "agent.stdout"))
		t.Fatalf("iteration 2's call of mcp__good__lookup did not reach the server:\n%+v\nagent.stdout:\n%.3000s", it2, stdout)
	}
	if !skillSeen(cli, it2[0], filepath.Join(run, "iterations", "2", "agent.stdout")) {
		t.Fatalf("%s did not load the skill finder in iteration 2: %.3000s", cli, it2[0].System)
	}
	calls, _ := os.ReadFile(filepath.Join(run, "mcp_calls.jsonl"))
	if !bytes.Contains(calls, []byte(`"iteration":2,"server":"good","tool":"lookup","status":"completed"`)) || bytes.Contains(calls, []byte("secret")) ||
		s.Iterations[1].Harness.Calls != 1 {
		t.Fatalf("mcp_calls.jsonl:\n%s", calls)
	}
	// Its broken server: qualification failed, sent back into the same session once
	// (the stub saw the session resumed with the report, holding the six earlier turns),
	// failed again, quarantined.
	h2 := s.Iterations[1].Harness
	if len(it2) != 8 || !strings.Contains(it2[6].LastUser, "hgate: artifact repair 1") || !strings.Contains(it2[6].LastUser, "exit status 3") ||
		len(h2.Phases) != 3 || h2.Phases[2].Phase != "artifact_repair_1" || len(h2.Qualifications) != 2 ||
		strings.Join(h2.Quarantined, ",") != "mcp mute" || strings.Join(h2.Qualified, ",") != "mcp good,skill finder" {
		var last string
		if len(it2) > 6 {
			last = it2[6].LastUser
		}
		t.Fatalf("iteration 2's harness: %+v; the stub saw %d calls of its session, want 8; the repair's prompt:\n%.2000s\n%s", h2, len(it2), last, log.String())
	}
	if !strings.Contains(log.String(), "iteration 2: qualification 1: 2 passed, 1 failed") {
		t.Fatalf("the log does not say the repaired harness failed again:\n%s", log.String())
	}

	// Iteration 3: the quarantined server is never given, never named; the tools
	// qualified in iteration 1 still are.
	it3 := stubSession(stub, s.Iterations[2].SessionID)
	prompt3, _ := os.ReadFile(filepath.Join(run, "iterations", "3", "prompt.txt"))
	if !bytes.Contains(prompt3, []byte("1 quarantined artifact(s) hidden")) || bytes.Contains(prompt3, []byte("mute")) ||
		!bytes.Contains(prompt3, []byte("MCP server `good`")) {
		t.Fatalf("iteration 3's prompt:\n%s", prompt3)
	}
	if len(it3) < 2 || !slices.Contains(it3[0].Tools, "mcp__good__lookup") || !strings.Contains(it3[1].ToolResult, "found it") ||
		!skillSeen(cli, it3[0], filepath.Join(run, "iterations", "3", "agent.stdout")) {
		t.Fatalf("iteration 3 was not given the tools of iteration 1: %v", it3)
	}
	for _, c := range it3 {
		for _, tool := range c.Tools {
			if strings.Contains(tool, "mute") {
				t.Fatalf("iteration 3 offered the model the quarantined server's %s", tool)
			}
		}
	}
	act, _ := os.ReadFile(filepath.Join(run, "iterations", "3", "activation", "activation.json"))
	if bytes.Contains(act, []byte("mute")) || !bytes.Contains(act, []byte(`"quarantined_hidden": 1`)) {
		t.Fatalf("iteration 3's activation.json:\n%s", act)
	}
	if !strings.Contains(log.String(), "iteration 3: .hgate/harness unchanged: the quarantined artifacts are judged again") {
		t.Fatalf("iteration 3 did not judge the quarantined server again:\n%s", log.String())
	}

	// The registry, hgate's (what hgate harness list --json prints).
	reg, err := env.Registry()
	if err != nil || reg == nil {
		t.Fatalf("the registry: %v", err)
	}
	want := map[string]string{"mcp/good": harness.Qualified, "skills/finder": harness.Qualified, "mcp/mute": harness.Quarantined}
	for _, e := range reg.Artifacts {
		if want[e.Path] != e.Status {
			t.Fatalf("the registry: %s is %s (%s), want %s", e.Path, e.Status, e.Reason, want[e.Path])
		}
		delete(want, e.Path)
		if e.Status == harness.Quarantined && !strings.Contains(e.Reason, "self_test") {
			t.Fatalf("the quarantine's reason: %q", e.Reason)
		}
	}
	if len(want) > 0 {
		t.Fatalf("the registry lacks %v", want)
	}
	// Three qualifications in the build's iteration (the first and two repairs of the
	// broken server) and one at the next, which judges the quarantined server again.
	out, err := exec.Command("git", "log", "--format=%s", "refs/hgate/harness").Output()
	if err != nil || strings.Count(string(out), "\n") != 4 {
		t.Fatalf("git log refs/hgate/harness: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude", "plugins", "hgate-harness")); err == nil {
		t.Fatalf("the activation wrote into ~/.claude")
	}
	if _, err := os.Stat(filepath.Join(home, ".codex", "skills", "finder")); err == nil {
		t.Fatalf("the activation wrote into ~/.codex")
	}
}

// stubSession is the stub's main calls of one session, in order.
func stubSession(stub *modelstub.Server, id string) []modelstub.Request {
	var out []modelstub.Request
	for _, c := range stub.Main() {
		if c.Session == id {
			out = append(out, c)
		}
	}
	return out
}

// skillSeen reports whether the CLI loaded the skill finder: claude lists it in its init
// event (agent.stdout) as its plugin's skill; codex names it among the skills in the
// instructions it sends the model.
func skillSeen(cli string, first modelstub.Request, stdout string) bool {
	if cli == "claude" {
		data, _ := os.ReadFile(stdout)
		return bytes.Contains(data, []byte(`"hgate-harness:finder"`))
	}
	return strings.Contains(first.System, "- finder: Find where a symbol is defined.")
}

// codexProvider writes the user's codex configuration, in home: the stub as its model
// provider, its key in HGATE_STUB_KEY.
func codexProvider(t *testing.T, home, url string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := "model = \"gpt-5\"\nmodel_provider = \"hgatestub\"\n[model_providers.hgatestub]\nname = \"hgatestub\"\nbase_url = \"" +
		url + "/v1\"\nwire_api = \"responses\"\nenv_key = \"HGATE_STUB_KEY\"\n"
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HGATE_STUB_KEY", "sk-stub")
}

// harnessProject is stubProject's repository with the preset and the harness phases.
func harnessProject(t *testing.T, preset string) *gittest.Repo {
	files := stubFiles(preset, "  iterations: 3\n  repair_attempts: 0\n  harness:\n    enabled: true\n    build_timeout: 10m\n")
	files["server.sh"] = `case "$1" in --self-test) exit 0 ;; esac
while IFS= read -r line; do
	id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
	case "$line" in
	*'"method":"initialize"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}\n' "$id" ;;
	*'"method":"tools/list"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"lookup","description":"looks up","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}]}}\n' "$id" ;;
	*'"method":"tools/call"'*) printf '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"found it"}]}}\n' "$id" ;;
	*'"method":"notifications/'*) ;;
	*) [ -n "$id" ] && printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}\n' "$id" ;;
	esac
done
`
	r := gittest.New(t)
	r.WriteFiles(files)
	return commitAndPrepare(t, r)
}

// copyExe copies an executable: a hard link where it can, else its bytes.
func copyExe(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}
