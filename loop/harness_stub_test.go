package loop_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/loop"
)

// TestHarnessPhasesAgainstClaude: the real claude runs two iterations of the loop with the
// harness phases through its preset, in hgate's sandbox where there is one, against a
// loopback stand-in of its model API. In iteration 1 the attempt's session is resumed to
// reflect (the answer written to HGATE_ANSWER_FILE) and to build a skill into the harness
// folder, with an MCP server: the stub sees one session growing through the three phases.
// hgate qualifies both, and iteration 2's fresh session is told of them in its prompt, has
// claude load the skill (its init event lists hgate-harness:finder), and the model's call
// of mcp__good__lookup reaches the server through hgate-mcp's proxy in the agent's sandbox,
// which logs it to mcp_calls.jsonl.
func TestHarnessPhasesAgainstClaude(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	if _, err := exec.LookPath("claude"); err != nil {
		t.Skipf("claude is not installed (.ci/run: npm install -g --ignore-scripts @anthropic-ai/claude-code): %v", err)
	}
	build := `mkdir -p .hgate/harness/skills/finder .hgate/harness/mcp/good && printf -- '---\nname: finder\ndescription: Find where a symbol is defined.\n---\nUse grep.\n' > .hgate/harness/skills/finder/SKILL.md && cp server.sh .hgate/harness/mcp/good/ && echo '{"name": "good", "command": "sh", "args": [".hgate/harness/mcp/good/server.sh"], "self_test": true}' > .hgate/harness/mcp/good/mcp.json`
	// By the assistant turns a session holds: the tool call fails in iteration 1 (no such
	// tool yet) and reaches the agent's server in iteration 2.
	stub := modelstub.Anthropic(t,
		modelstub.Turn{Tool: "mcp__good__lookup", Input: map[string]any{"q": "secret words"}},
		modelstub.Turn{Command: "cp best.sh agent.sh"}, modelstub.Turn{Text: "done"}, // attempt
		modelstub.Turn{Command: `echo '{"kind":"skill","name":"finder"}' > "$HGATE_ANSWER_FILE"`}, modelstub.Turn{Text: "reflected"},
		modelstub.Turn{Command: build}, modelstub.Turn{Text: "built"})
	home, bin := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	os.Unsetenv("CLAUDE_CONFIG_DIR")
	t.Setenv("ANTHROPIC_BASE_URL", stub.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	t.Setenv("IS_SANDBOX", "1")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A copy, not a link: qualification's sandbox reads hgate-mcp's folder only.
	if err := copyExe(self, filepath.Join(bin, "hgate-mcp")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := harnessProject(t)
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
	it := s.Iterations[0]
	if it.Harness == nil || len(it.Harness.Phases) != 2 || it.Harness.Phases[0].Agent != loop.AgentOK || it.Harness.Phases[1].Agent != loop.AgentOK {
		t.Fatalf("iteration 1's harness phases: %+v\n%s", it.Harness, log.String())
	}
	if it.Harness.Reflection != `{"kind":"skill","name":"finder"}` || strings.Join(it.Harness.Qualified, ",") != "mcp good,skill finder" {
		build, _ := exec.Command("sh", "-c", "find .hgate; cat workspace/runs/*/iterations/1/qualification/attempt_0/qualification.json; ls -la .hgate/harness/skills/finder").CombinedOutput()
		t.Fatalf("reflection %q, qualified %v\n%s\nthe harness folder and the report:\n%s", it.Harness.Reflection, it.Harness.Qualified, log.String(), build)
	}
	var session []modelstub.Request
	for _, c := range stub.Main() {
		if c.Session == it.SessionID {
			session = append(session, c)
		}
	}
	if len(session) != 7 {
		t.Fatalf("the stub saw %d calls of session %q, want 7 (attempt, reflect, build)", len(session), it.SessionID)
	}
	for i, c := range session {
		if c.Turn != i {
			t.Fatalf("call %d of the session held %d assistant turns, want %d: not one session resumed", i+1, c.Turn, i)
		}
	}
	dir := filepath.Join(r.Dir, "workspace", "runs", s.RunID, "iterations", "2")
	prompt, _ := os.ReadFile(filepath.Join(dir, "prompt.txt"))
	stdout, _ := os.ReadFile(filepath.Join(dir, "agent.stdout"))
	if !bytes.Contains(prompt, []byte("skill `finder`: Find where a symbol is defined.")) || !bytes.Contains(stdout, []byte(`"hgate-harness:finder"`)) {
		t.Fatalf("iteration 2 was not given the skill: prompt:\n%s\nagent.stdout:\n%.2000s", prompt, stdout)
	}
	if s.Iterations[1].SessionID == it.SessionID {
		t.Fatalf("iteration 2 resumed iteration 1's session")
	}
	// Iteration 2's call of the agent's tool went through hgate's proxy, in the sandbox.
	var answer string
	for _, c := range stub.Main() {
		if c.Session == s.Iterations[1].SessionID && c.Turn == 1 {
			answer = c.ToolResult
		}
	}
	calls, _ := os.ReadFile(filepath.Join(r.Dir, "workspace", "runs", s.RunID, "mcp_calls.jsonl"))
	if !strings.Contains(answer, "found it") || !bytes.Contains(calls, []byte(`"iteration":2,"server":"good","tool":"lookup","status":"completed"`)) ||
		bytes.Contains(calls, []byte("secret")) || s.Iterations[1].Harness.Calls != 1 {
		t.Fatalf("iteration 2's call of mcp__good__lookup: the model got %q; mcp_calls.jsonl:\n%s\nagent.stdout:\n%.3000s", answer, calls, stdout)
	}
}

// harnessProject is stubProject's repository with the claude preset and the harness phases.
func harnessProject(t *testing.T) *gittest.Repo {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{
		".gitignore": "/workspace/\n",
		"PROGRAM.md": "# Program\nMake every task pass. Edit agent.sh only.\n",
		"hgate.yaml": `allow: [agent.sh]
benchmark:
  tasks: {file: tasks.txt}
  run: ["sh", "check.sh", "{task}"]
  concurrency: 2
split: {test_fraction: 0.5}
loop:
  agent: claude
  attempt_timeout: 2m
  iterations: 2
  repair_attempts: 0
  harness:
    enabled: true
    build_timeout: 2m
`,
		"tasks.txt": "b1\nb2\nb3\nb4\n",
		"check.sh":  "out=$(sh agent.sh \"$1\")\n[ \"$out\" = \"solved $1\" ]\n",
		"agent.sh":  "case $1 in b1) echo \"solved $1\" ;; esac\n",
		"best.sh":   "echo \"solved $1\"\n",
		"server.sh": `case "$1" in --self-test) exit 0 ;; esac
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
`,
	})
	r.Commit("init")
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Prepare(context.Background(), env); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return r
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
