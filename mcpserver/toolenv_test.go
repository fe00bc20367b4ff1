package mcpserver

import (
	"slices"
	"strings"
	"testing"
)

// TestToolEnv: nothing hgate sets reaches an agent-built server, in qualification or use.
func TestToolEnv(t *testing.T) {
	t.Setenv("HGATE_SPLIT", "qualify")
	t.Setenv("HGATE_TASK", "smoke.x")
	t.Setenv("HGATE_ITERATION", "2")
	t.Setenv("CODEX_HOME", "/x")
	t.Setenv("KEEP_ME", "1")
	env := toolEnv()
	for _, kv := range env {
		if strings.HasPrefix(kv, "HGATE_") || strings.HasPrefix(kv, "CODEX_HOME=") {
			t.Errorf("%s reached the tool", kv)
		}
	}
	if !slices.Contains(env, "KEEP_ME=1") {
		t.Error("the rest of the environment did not")
	}
}
