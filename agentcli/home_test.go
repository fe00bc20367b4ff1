package agentcli

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHomes: claude's and codex's homes, where the user keeps them and where
// CLAUDE_CONFIG_DIR and CODEX_HOME move them; aider and a custom command have none.
func TestHomes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	h := Claude{}.Home()
	if h.Var != "CLAUDE_CONFIG_DIR" || h.From != filepath.Join(home, ".claude") || h.Login != ".credentials.json" ||
		h.Copy[0].From != filepath.Join(home, ".claude.json") || h.Copy[0].Start != "{}\n" {
		t.Errorf("claude's home: %+v", h)
	}
	t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(home, "cc"))
	if h := (Claude{}).Home(); h.From != filepath.Join(home, "cc") || h.Copy[0].From != filepath.Join(home, "cc", ".claude.json") {
		t.Errorf("claude's home with CLAUDE_CONFIG_DIR: %+v", h)
	}
	if h := (Codex{}).Home(); h.Var != "CODEX_HOME" || h.From != filepath.Join(home, ".codex") || h.Copy[0].Name != "config.toml" {
		t.Errorf("codex's home: %+v", h)
	}
	for _, c := range []CLI{Aider{}, Custom{Argv: []string{"x"}}} {
		if h := c.Home(); h.Var != "" {
			t.Errorf("%T has a home: %+v", c, h)
		}
		if _, err := c.Login([]byte(`{}`)); err == nil {
			t.Errorf("%T takes a login", c)
		}
	}
}

// TestLogins: a login is taken only in its CLI's credentials shape; anything else, a key
// it does not know (a hook), a value of another type, more after the object, is refused.
func TestLogins(t *testing.T) {
	for _, tc := range []struct {
		cli  CLI
		data string
		ok   bool
	}{
		{Claude{}, `{"claudeAiOauth":{"accessToken":"a","refreshToken":"r","expiresAt":1764500000000,"scopes":["user:inference"],"subscriptionType":"max","rateLimitTier":null}}`, true},
		{Claude{}, `{"claudeAiOauth":{"accessToken":"a","refreshToken":"r","expiresAt":1},"hooks":{"SessionStart":[]}}`, false},
		{Claude{}, `{"claudeAiOauth":{"accessToken":"a","refreshToken":"r","expiresAt":"soon"}}`, false},
		{Claude{}, `{"claudeAiOauth":{"accessToken":"a","refreshToken":"r","apiKeyHelper":"sh x"}}`, false},
		{Claude{}, `{"claudeAiOauth":{"accessToken":"a","refreshToken":"r"}} {}`, false},
		{Claude{}, `{"claudeAiOauth":{"accessToken":"a"}}`, false},
		{Claude{}, `not json`, false},
		{Codex{}, `{"OPENAI_API_KEY":null,"tokens":{"id_token":"i","access_token":"a","refresh_token":"r","account_id":"x"},"last_refresh":"2026-11-30T00:00:00Z"}`, true},
		{Codex{}, `{"OPENAI_API_KEY":"sk-1"}`, true},
		{Codex{}, `{"OPENAI_API_KEY":"sk-1","notify":["sh","-c","x"]}`, false},
		{Codex{}, `{"tokens":{"access_token":"a","refresh_token":7}}`, false},
	} {
		out, err := tc.cli.Login([]byte(tc.data))
		if (err == nil) != tc.ok {
			t.Errorf("%s login %s: %v", tc.cli.Name(), tc.data, err)
		}
		if err == nil && (strings.Contains(string(out), "hooks") || !strings.HasSuffix(string(out), "}\n")) {
			t.Errorf("%s login re-encoded as %s", tc.cli.Name(), out)
		}
	}
}
