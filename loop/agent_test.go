package loop

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// agentIn runs sh -c script as the agent, its files in a temporary folder.
func agentIn(t *testing.T, script string) *agentRun {
	dir := t.TempDir()
	stdin := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(stdin, []byte("the prompt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &agentRun{
		Args: []string{"sh", "-c", script}, Dir: dir, Env: os.Environ(), Grace: 100 * time.Millisecond,
		Stdin: stdin, Stdout: filepath.Join(dir, "agent.stdout"), Stderr: filepath.Join(dir, "agent.stderr"),
	}
}

func TestAgentOutcomes(t *testing.T) {
	tests := []struct {
		script  string
		outcome AgentOutcome
		code    int
		detail  string
	}{
		{"cat > /dev/null", AgentOK, 0, ""},
		{"exit 3", AgentCrashed, 3, "exit status 3"},
		{"kill -9 $$", AgentCrashed, -1, "killed by signal killed"},
	}
	for _, tt := range tests {
		res := agentIn(t, tt.script).run(context.Background())
		if res.Outcome != tt.outcome || res.ExitCode != tt.code || res.Detail != tt.detail {
			t.Errorf("%s: %+v, want %s, exit %d, %q", tt.script, res, tt.outcome, tt.code, tt.detail)
		}
	}
	a := agentIn(t, "exit 0")
	a.Args = []string{filepath.Join(t.TempDir(), "no-such-agent")}
	if res := a.run(context.Background()); res.Outcome != AgentCrashed || res.Detail == "" {
		t.Errorf("missing agent: %+v", res)
	}
}

// TestAgentPastDeadline: an agent started when the run's deadline has already passed
// is stopped at once; it used to run without any limit.
func TestAgentPastDeadline(t *testing.T) {
	a := agentIn(t, "sleep 30")
	a.Timeout, a.Deadline = time.Hour, time.Now().Add(-time.Second)
	if res := a.run(context.Background()); res.Outcome != AgentTimeout {
		t.Errorf("%+v, want a timeout", res)
	}
}

func TestAgentInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a := agentIn(t, "trap '' TERM; sleep 30")
	a.Started = func(int) { cancel() }
	if res := a.run(ctx); res.Outcome != AgentInterrupted || res.Detail != "stopped: hgate was interrupted" {
		t.Errorf("%+v, want interrupted", res)
	}
}
