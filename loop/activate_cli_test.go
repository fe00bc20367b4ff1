package loop

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/internal/modelstub"
)

// TestActivationAgainstClaude: the real claude (as .ci/run installs it), given an
// activation's flags on the preset's command line — a second --mcp-config file beside
// hgate's own server, and --plugin-dir with a skill — against a loopback stand-in of its
// model API: the agent's server is started behind hgate-mcp's proxy and offered as
// mcp__good__lookup, claude loads the skill (its init event lists
// hgate-harness:symbolfinder), the model's call of the tool reaches the server and comes
// back, and the proxy logs it (keys, never values). Nothing is written to the worktree.
func TestActivationAgainstClaude(t *testing.T) {
	modelstub.NeedCLI(t, "claude")
	home, dir, bin := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	os.Unsetenv("CLAUDE_CONFIG_DIR")
	stub := modelstub.Anthropic(t, modelstub.Turn{Tool: "mcp__good__lookup", Input: map[string]any{"q": "secret words"}}, modelstub.Turn{Text: "done"})
	t.Setenv("ANTHROPIC_BASE_URL", stub.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	t.Setenv("IS_SANDBOX", "1")
	proxy := linkSelf(t, bin)
	writeServer(t, dir)
	skill := filepath.Join(dir, "act", "skills", "symbolfinder")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: symbolfinder\ndescription: Find where a symbol is defined before editing.\n---\nRun grep -rn first.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "calls.jsonl")
	act := &activation{Proxy: proxy, Log: log, Iteration: 1, SkillsDir: filepath.Join(dir, "act", "skills"),
		MCP: []activeMCP{{Name: "good", Command: "sh", Args: []string{"server.sh"}, Cwd: dir, StartupSec: 10, ToolSec: 60}}}
	if err := act.writeMCPConfig(filepath.Join(dir, "act", "claude-mcp.json")); err != nil {
		t.Fatal(err)
	}
	if err := act.claudePlugin(filepath.Join(dir, "act")); err != nil {
		t.Fatal(err)
	}
	args, err := Command([]string{"claude"}, "")
	if err != nil {
		t.Fatal(err)
	}
	args, env := act.apply(agentcli.For([]string{"claude"}), args)
	if !slices.Contains(env, "MCP_CONNECTION_NONBLOCKING=0") {
		t.Fatalf("claude's activation environment %v: want MCP_CONNECTION_NONBLOCKING=0, so that its first turn waits for the servers", env)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), env...)
	// hgate's own server is on the command line too: hgate is not on PATH here, so
	// claude reports it failed and goes on with the others.
	cmd.Dir, cmd.Stdin = dir, strings.NewReader("Look it up.")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	main := stub.Main()
	if len(main) < 2 || !slices.Contains(main[0].Tools, "mcp__good__lookup") {
		var tools []string
		if len(main) > 0 {
			tools = main[0].Tools
		}
		t.Fatalf("claude offered the model %v, want mcp__good__lookup among them\n%s", tools, out)
	}
	// The CLI's own init event names what it loaded.
	if !bytes.Contains(out, []byte(`"hgate-harness:symbolfinder"`)) || !bytes.Contains(out, []byte(`{"name":"good","status":"connected"}`)) {
		t.Errorf("claude's init event does not list the skill hgate-harness:symbolfinder and the server good connected\n%.3000s", out)
	}
	if !strings.Contains(main[1].ToolResult, "found it") {
		t.Errorf("the tool's answer did not reach the model: %q", main[1].ToolResult)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 { // server.sh, act/, calls.jsonl
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("claude wrote into its working folder: %v", names)
	}
	data, err := os.ReadFile(log)
	if err != nil || !bytes.Contains(data, []byte(`"server":"good","tool":"lookup","status":"completed"`)) || bytes.Contains(data, []byte("secret")) {
		t.Fatalf("the proxy's log: %v\n%s", err, data)
	}
}

// TestActivationAgainstCodex: the real codex, given the activation's -c
// mcp_servers.<name>.… keys on the preset's command line, starts the agent's server
// behind hgate-mcp's proxy, offers its tool to the model, and the model's call of it
// reaches the server and comes back, logged by the proxy. codex-cli 0.169.0 offers an MCP
// server's tools as one namespace tool, mcp__<server>, whose functions are the tools.
func TestActivationAgainstCodex(t *testing.T) {
	modelstub.NeedCLI(t, "codex")
	home, dir, bin := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	os.Unsetenv("CODEX_HOME")
	tool := "mcp__good__lookup" // the stub's flat name of codex's namespace mcp__good, function lookup
	stub := modelstub.OpenAI(t, modelstub.Turn{Tool: tool, Input: map[string]any{"q": "secret words"}}, modelstub.Turn{Text: "done"})
	t.Setenv("HGATE_STUB_KEY", "sk-stub")
	proxy := linkSelf(t, bin)
	writeServer(t, dir)
	log := filepath.Join(dir, "calls.jsonl")
	act := &activation{Proxy: proxy, Log: log, Iteration: 1,
		MCP: []activeMCP{{Name: "good", Command: "sh", Args: []string{"server.sh"}, Cwd: dir, StartupSec: 10, ToolSec: 60}}}
	args, err := Command([]string{"codex"}, "")
	if err != nil {
		t.Fatal(err)
	}
	args, _ = act.apply(agentcli.For([]string{"codex"}), args)
	args = slices.Insert(args, 2, append(modelstub.CodexProvider(stub.URL, "HGATE_STUB_KEY"), "--skip-git-repo-check")...)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Stdin = dir, strings.NewReader("Look it up.")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	main := stub.Main()
	if len(main) < 2 || !slices.Contains(main[0].Tools, tool) {
		var tools []string
		if len(main) > 0 {
			tools = main[0].Tools
		}
		t.Fatalf("codex offered the model %v, want %s among them\n%s", tools, tool, out)
	}
	if !strings.Contains(main[1].ToolResult, "found it") {
		t.Errorf("the tool's answer did not reach the model: %q\n%s", main[1].ToolResult, out)
	}
	data, err := os.ReadFile(log)
	if err != nil || !bytes.Contains(data, []byte(`"server":"good","tool":"lookup","status":"completed"`)) || bytes.Contains(data, []byte("secret")) {
		t.Fatalf("the proxy's log: %v\n%s", err, data)
	}
}

// linkSelf links the test binary as bin/hgate-mcp (TestMain serves as it under that name).
func linkSelf(t *testing.T, bin string) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	proxy := filepath.Join(bin, "hgate-mcp")
	if err := os.Symlink(self, proxy); err != nil {
		t.Fatal(err)
	}
	return proxy
}

// writeServer writes dir/server.sh, a newline-JSON MCP server with one tool, lookup.
func writeServer(t *testing.T, dir string) {
	server := `while IFS= read -r line; do
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
	if err := os.WriteFile(filepath.Join(dir, "server.sh"), []byte(server), 0o644); err != nil {
		t.Fatal(err)
	}
}
