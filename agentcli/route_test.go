package agentcli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCodexUpstream: the provider codex's config.toml selects is where the gateway
// forwards, with the key of its env_key; the built-in one needs OPENAI_API_KEY (a ChatGPT
// login is not routed).
func TestCodexUpstream(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CODEX_HOME", home)
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	if u, ok := (Codex{}).Upstream(); ok {
		t.Fatalf("no config and no key: routed to %+v", u)
	}
	t.Setenv("OPENAI_API_KEY", "sk-1")
	if u, ok := (Codex{}).Upstream(); !ok || u.Key != "sk-1" || u.KeyEnv != "OPENAI_API_KEY" || u.API != "openai" {
		t.Fatalf("built-in provider: %+v %v", u, ok)
	}
	toml := "model = \"m\"\nmodel_provider = \"mine\"\n[model_providers.other]\nbase_url = \"http://wrong\"\n[model_providers.mine]\nname = \"mine\"\nbase_url = \"http://127.0.0.1:9/v1\"\nenv_key = \"MY_KEY\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MY_KEY", "sk-mine")
	if u, ok := (Codex{}).Upstream(); !ok || u.URL != "http://127.0.0.1:9/v1" || u.Key != "sk-mine" || u.KeyEnv != "MY_KEY" {
		t.Fatalf("custom provider: %+v %v", u, ok)
	}
}

// TestCodexRoute: the gateway's provider is set on exec's command line, and a resume of
// the routed command line still goes before its "-".
func TestCodexRoute(t *testing.T) {
	t.Setenv("CODEX_HOME", t.TempDir()) // no config.toml: the built-in provider
	args, env := (Codex{}).Route(Codex{}.Args(), Via{Base: "http://127.0.0.1:5/s/tok", Held: true})
	line := strings.Join(args, " ")
	if !strings.Contains(line, `model_provider="hgate_gateway"`) || !strings.Contains(line, `model_providers.hgate_gateway.base_url="http://127.0.0.1:5/s/tok/v1"`) ||
		!slices.Equal(env, []string{"HGATE_GATEWAY_KEY=" + KeyPlaceholder}) || args[1] != "exec" {
		t.Fatalf("routed: %q, env %q", line, env)
	}
	if strings.Contains(line, "web_search") {
		t.Fatalf("web search turned off with the network on: %q", line)
	}
	if off, _ := (Codex{}).Route(Codex{}.Args(), Via{Base: "http://127.0.0.1:5/s/tok", NoWebTools: true}); !strings.Contains(strings.Join(off, " "), `-c web_search="disabled"`) {
		t.Fatalf("network model, web search not turned off: %q", off)
	}
	res, ok := (Codex{}).Resume(args, "id1")
	if !ok || res[len(res)-3] != "resume" || res[len(res)-1] != "-" {
		t.Fatalf("resumed: %q", res)
	}
}

// TestClaudeRoute: the base URL is the gateway's; claude on another cloud is not routed.
func TestClaudeRoute(t *testing.T) {
	t.Setenv("CLAUDE_CODE_USE_BEDROCK", "1")
	if _, ok := (Claude{}).Upstream(); ok {
		t.Fatal("claude on Bedrock was routed")
	}
	t.Setenv("CLAUDE_CODE_USE_BEDROCK", "")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant")
	if u, ok := (Claude{}).Upstream(); !ok || u.Key != "sk-ant" || u.KeyEnv != "ANTHROPIC_API_KEY" {
		t.Fatalf("%+v %v", u, ok)
	}
	_, env := (Claude{}).Route(nil, Via{Base: "http://127.0.0.1:5/s/tok"})
	if !slices.Equal(env, []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:5/s/tok"}) {
		t.Fatalf("env %q", env)
	}
}

// TestCodexRouteOwnProvider: a provider of the user's keeps its name, its base_url the
// gateway's.
func TestCodexRouteOwnProvider(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CODEX_HOME", home)
	toml := "model_provider = \"mine\"\n[model_providers.mine]\nbase_url = \"http://127.0.0.1:9/v1\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	args, env := (Codex{}).Route(Codex{}.Args(), Via{Base: "http://127.0.0.1:5/s/tok", Held: true})
	if line := strings.Join(args, " "); !strings.Contains(line, `-c model_providers.mine.base_url="http://127.0.0.1:5/s/tok/v1"`) ||
		strings.Contains(line, "model_provider=") || env != nil {
		t.Fatalf("routed: %q, env %q", line, env)
	}
}
