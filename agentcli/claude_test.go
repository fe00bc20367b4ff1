package agentcli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/agentout"
)

// parseFixture reads one of agentout's recorded outputs with c's parser.
func parseFixture(t *testing.T, c CLI, name string) agentout.Run {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "agentout", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run, err := c.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestClaude: claude is given the active servers as a second --mcp-config file and the
// skills as a --plugin-dir; IS_SANDBOX=1 only inside hgate's sandbox; its home files, the
// one that starts as {}, and its recorded stream-json read back.
func TestClaude(t *testing.T) {
	c := For([]string{" claude "})
	if c.Name() != "claude" {
		t.Fatalf("For(claude) = %q", c.Name())
	}
	args, env := c.Apply(c.Args(), Tools{MCPConfig: "/a/claude-mcp.json", PluginDir: "/a/plugin"})
	line := strings.Join(args, " ")
	if !strings.HasPrefix(line, "claude --plugin-dir /a/plugin -p") || args[len(args)-1] != "/a/claude-mcp.json" || !slices.Equal(env, []string{"MCP_CONNECTION_NONBLOCKING=0"}) {
		t.Errorf("claude with tools: %q %q", line, env)
	}
	if same, _ := c.Apply(c.Args(), Tools{}); !slices.Equal(same, c.Args()) {
		t.Errorf("claude without tools: %q", same)
	}
	t.Setenv("IS_SANDBOX", "yes")
	if env := c.Env(true, "/tmp/x"); !slices.Equal(env, []string{"IS_SANDBOX=1"}) {
		t.Errorf("sandboxed claude's env: %q", env)
	}
	if env := c.Env(false, "/tmp/x"); env != nil {
		t.Errorf("unsandboxed claude's env: %q", env)
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	if w := c.Writable(); !slices.Equal(w, []string{"~/.cache/claude-cli-nodejs/"}) {
		t.Errorf("claude's folders besides its home: %q", w)
	}
	if s, ok := FileStart("/home/u/.claude.json"); !ok || s != "{}\n" {
		t.Errorf(".claude.json starts as %q %v", s, ok)
	}
	if _, ok := FileStart("/home/u/.codex"); ok {
		t.Errorf("a folder given a start")
	}
	if run := parseFixture(t, c, "claude-tool-use.jsonl"); run.Format != agentout.FormatClaude || run.CostUSD == nil || *run.CostUSD != 0.02 {
		t.Errorf("claude's output: %+v", run)
	}
}
