package agentcli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/agentout"
)

// TestCodexCommandLine: codex's own sandbox comes back without hgate's; each active
// server becomes -c mcp_servers keys after exec; the model its config.toml names; its
// recorded JSON Lines read back.
func TestCodexCommandLine(t *testing.T) {
	c := For([]string{"codex"})
	if got := c.Unsandboxed(c.Args()); !slices.Contains(got, "workspace-write") || slices.Contains(got, "danger-full-access") {
		t.Errorf("unsandboxed codex: %q", got)
	}
	args, _ := c.Apply(c.Args(), Tools{MCP: []MCPServer{{Name: "good", Command: "sh", Args: []string{"s.sh"}, StartupSec: 10, ToolSec: 60, EnabledTools: []string{"look"}}}})
	line := strings.Join(args, " ")
	for _, want := range []string{`codex exec -c mcp_servers.good.command="sh" -c mcp_servers.good.args=["s.sh"]`,
		"mcp_servers.good.startup_timeout_sec=10", "mcp_servers.good.tool_timeout_sec=65", `mcp_servers.good.enabled_tools=["look"]`} {
		if !strings.Contains(line, want) {
			t.Errorf("codex with a server: %q lacks %q", line, want)
		}
	}
	home := t.TempDir()
	t.Setenv("CODEX_HOME", home)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte("model = 'gpt-5'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if m := ConfigModel([]string{"sh", "-c", "/usr/bin/codex", "exec"}); m != "gpt-5" {
		t.Errorf("codex's configured model %q", m)
	}
	if m := ConfigModel([]string{"claude", "-p"}); m != "" {
		t.Errorf("claude's configured model %q", m)
	}
	if h := c.Home(); h.Var != "CODEX_HOME" || h.From != home || h.Login != "auth.json" || c.Writable() != nil {
		t.Errorf("codex's home with CODEX_HOME: %+v, writable %q", h, c.Writable())
	}
	if run := parseFixture(t, c, "codex-resumed.jsonl"); run.Format != agentout.FormatCodex || !run.Cumulative() {
		t.Errorf("codex's output: %+v", run)
	}
}
