package loop_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/loop"
)

// TestClaudeEditInPlaceOnly runs claude's own Read and Edit tools on agent.sh, which the
// slash-less pattern agent.sh allows: in the sandbox that file may be rewritten in place,
// but no temporary file may be made beside it. Claude Code saves through a temporary file
// and a rename; the edit must still land (its fallback writes in place) and be kept.
//
// The agent's mounts are read-only outside its write set, but the folder of agent.sh stays
// a writable mount (sandbox.Policy.MountWrite): the temporary file is refused by Landlock
// with EACCES, on which claude falls back to writing in place, not with EROFS, on which
// claude 2.1.197 does not.
func TestClaudeEditInPlaceOnly(t *testing.T) {
	modelstub.NeedCLI(t, "claude")
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	r := stubProject(t, "claude")
	file := filepath.Join(r.Dir, "agent.sh")
	stub := modelstub.Anthropic(t,
		modelstub.Turn{Tool: "Read", Input: map[string]any{"file_path": file}},
		modelstub.Turn{Tool: "Edit", Input: map[string]any{"file_path": file, "old_string": "case $1 in b1) echo \"solved $1\" ;; esac", "new_string": "echo \"solved $1\""}},
		modelstub.Turn{Text: "done"})
	t.Setenv("ANTHROPIC_BASE_URL", stub.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lc := env.Config.Loop
	lc.RepairAttempts = 0
	var log strings.Builder
	s, err := loop.Run(context.Background(), loop.Options{Env: env, Loop: lc, Log: &log, Grace: time.Second})
	if err != nil {
		t.Fatalf("loop: %v\n%s", err, log.String())
	}
	it := s.Iterations[0]
	data, _ := os.ReadFile(filepath.Join(r.Dir, "workspace", "runs", s.RunID, "iterations", "1", "agent.stdout"))
	if it.Outcome != loop.OutcomeKept || !strings.HasPrefix(it.Sandbox, "landlock") {
		t.Fatalf("iteration: %s, agent %s (%s), sandbox %q, refused %v\n%s\nagent.stdout:\n%s", it.Outcome, it.Agent, it.AgentDetail, it.Sandbox, it.Refused, log.String(), data)
	}
}
