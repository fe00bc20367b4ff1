package agentcli

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
)

func init() { Register(Claude{}) }

// Claude is Claude Code in print mode.
type Claude struct{ Base }

// Name implements CLI.
func (Claude) Name() string { return "claude" }

// Args implements CLI. Claude Code print mode reads the prompt from stdin; without
// skipping the permission prompts it would wait for a human. --mcp-config (claude-code
// CLI reference: "Load MCP servers from JSON files or strings") adds hgate's tools;
// ${VAR} in a server's env is expanded by claude (its MCP docs, "Environment variable
// expansion"), so the tools reach this loop's socket. --output-format stream-json (which
// needs --verbose in print mode) streams one JSON event a line and ends with the result
// object: session_id, total_cost_usd, usage, is_error (read by the agentout package; the
// progress line shows the last event).
func (Claude) Args() []string {
	return []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--mcp-config",
		`{"mcpServers":{"hgate":{"type":"stdio","command":"hgate","args":["mcp"],"env":{"HGATE_LOOP_SOCKET":"${HGATE_LOOP_SOCKET}"}}}}`}
}

// Resume implements CLI: claude's --resume <id> after -p (print mode keeps reading the
// prompt from stdin).
func (Claude) Resume(args []string, id string) ([]string, bool) {
	if i := slices.Index(args, "-p"); i >= 0 && id != "" {
		return slices.Insert(slices.Clone(args), i+1, "--resume", id), true
	}
	return args, false
}

// Apply implements CLI: claude's --mcp-config takes several configs, hgate's own server's
// then the active servers' file; --plugin-dir adds the plugin holding the active skills.
// In -p mode claude connects --mcp-config servers without waiting and snapshots its tools
// at the first turn, so on a busy machine a qualified server could still be "pending"
// then and its tools missing all session: MCP_CONNECTION_NONBLOCKING=0 makes it wait
// (its MCP startup timeout still bounds the wait).
func (Claude) Apply(args []string, t Tools) ([]string, []string) {
	out := slices.Clone(args)
	if i := slices.Index(out, "--mcp-config"); i >= 0 && t.MCPConfig != "" && i+1 < len(out) {
		out = slices.Insert(out, i+2, t.MCPConfig)
	}
	if t.PluginDir != "" {
		out = slices.Insert(out, 1, "--plugin-dir", t.PluginDir)
	}
	if t.MCPConfig == "" {
		return out, nil
	}
	return out, []string{"MCP_CONNECTION_NONBLOCKING=0"}
}

// Env implements CLI. Claude Code refuses --dangerously-skip-permissions as root unless
// IS_SANDBOX is exactly "1" (its root guard's escape, as 2.1.197 and 2.1.330 check it):
// set only when the agent really runs in hgate's sandbox, and over any other value the
// caller's environment gives it (IS_SANDBOX=yes would not do).
func (Claude) Env(sandboxed bool, tmp string) []string {
	if sandboxed && os.Getenv("IS_SANDBOX") != "1" {
		return []string{"IS_SANDBOX=1"}
	}
	return nil
}

// Writable implements CLI: the folder Claude Code 2.1.197 keeps its logs in
// (~/.cache/claude-cli-nodejs/<project>/: errors, messages, mcp-logs-<server>), which
// CLAUDE_CONFIG_DIR does not move. Claude only writes there, and lists it to delete old
// log folders: nothing in it is run or read as configuration, so it stays shared with
// the user's own sessions.
func (Claude) Writable() []string { return []string{"~/.cache/claude-cli-nodejs/"} }

// Home implements CLI: CLAUDE_CONFIG_DIR moves ~/.claude and ~/.claude.json (to
// $CLAUDE_CONFIG_DIR/.claude.json), as Claude Code 2.1.197 and 2.1.330 read them.
// The login is .credentials.json; settings.json and .claude.json (an empty object
// when missing: an empty file claude reports as corrupted) are copied; the user's
// CLAUDE.md, agents, commands and skills are linked.
func (Claude) Home() Home {
	user, err := userDir("CLAUDE_CONFIG_DIR", ".claude")
	if err != nil {
		return Home{}
	}
	claudeJSON := filepath.Join(user, ".claude.json")
	if os.Getenv("CLAUDE_CONFIG_DIR") == "" {
		claudeJSON = filepath.Join(filepath.Dir(user), ".claude.json")
	}
	h := Home{Var: "CLAUDE_CONFIG_DIR", From: user, Login: ".credentials.json",
		Copy: []HomeFile{{Name: ".claude.json", From: claudeJSON, Start: "{}\n"}, {Name: "settings.json", From: filepath.Join(user, "settings.json")}}}
	for _, n := range []string{"CLAUDE.md", "agents", "commands", "skills"} {
		h.Link = append(h.Link, HomeFile{Name: n, From: filepath.Join(user, n)})
	}
	return h
}

// claudeLogin is Claude Code's .credentials.json on Linux: its OAuth login.
type claudeLogin struct {
	OAuth *struct {
		AccessToken      string   `json:"accessToken"`
		RefreshToken     string   `json:"refreshToken"`
		ExpiresAt        int64    `json:"expiresAt"`
		Scopes           []string `json:"scopes"`
		SubscriptionType *string  `json:"subscriptionType"`
		RateLimitTier    *string  `json:"rateLimitTier"`
	} `json:"claudeAiOauth"`
}

// Login implements CLI: a claudeAiOauth object with its tokens, and nothing else (an
// MCP server's OAuth tokens, mcpOAuth, are not carried).
func (Claude) Login(data []byte) ([]byte, error) {
	var l claudeLogin
	out, err := decodeStrict(data, &l)
	if err != nil {
		return nil, err
	}
	if l.OAuth == nil || l.OAuth.AccessToken == "" || l.OAuth.RefreshToken == "" {
		return nil, errors.New("no claudeAiOauth with an accessToken and a refreshToken")
	}
	return out, nil
}

// FileStart implements CLI: ~/.claude.json starts as an empty object (an empty file
// claude reports as corrupted).
func (Claude) FileStart(p string) (string, bool) {
	if filepath.Base(p) == ".claude.json" {
		return "{}\n", true
	}
	return "", false
}

// Upstream implements Routed: the Anthropic API at ANTHROPIC_BASE_URL (its own when
// unset), with ANTHROPIC_API_KEY, or the user's login (ANTHROPIC_AUTH_TOKEN, a
// subscription) passed through. Claude on Bedrock, Vertex or Foundry is not routed:
// the gateway speaks the Anthropic API only.
func (Claude) Upstream() (Upstream, bool) {
	for _, v := range []string{"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"} {
		if os.Getenv(v) != "" && os.Getenv(v) != "0" {
			return Upstream{Why: v + " is set: the gateway speaks the Anthropic API only"}, false
		}
	}
	return Upstream{API: "anthropic", URL: os.Getenv("ANTHROPIC_BASE_URL"), Key: os.Getenv("ANTHROPIC_API_KEY"), KeyEnv: "ANTHROPIC_API_KEY"}, true
}

// Route implements Routed: ANTHROPIC_BASE_URL is the gateway's (claude sends a HEAD
// there first, which the gateway answers itself), and ANTHROPIC_API_KEY the placeholder
// when the gateway holds the key.
func (Claude) Route(args []string, via Via) ([]string, []string) {
	env := []string{"ANTHROPIC_BASE_URL=" + via.Base}
	if via.Held {
		env = append(env, "ANTHROPIC_API_KEY="+KeyPlaceholder)
	}
	return args, env
}
