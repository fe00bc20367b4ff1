package loop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hgate/hgate/agentout"
	"github.com/hgate/hgate/internal/sandbox"
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

// TestKillLeftoverOnlyItsOwnTag: ending a killed hgate's leftover agent reaches the
// processes carrying its tag and no other run's, even one with the same run id (run
// ids are start times: two loops, in two repositories or two test packages, can share
// one). Before the tag, every process with that HGATE_RUN_ID was killed.
func TestKillLeftoverOnlyItsOwnTag(t *testing.T) {
	start := func(tag string) *exec.Cmd {
		cmd := exec.Command("sleep", "60")
		cmd.Env = append(os.Environ(), "HGATE_RUN_ID=20261124-080000", agentTagEnv+"="+tag)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	mine, other := start("mine"), start("other")
	done := make(chan error, 1)
	go func() { done <- mine.Wait() }()
	killLeftover(0, "", "mine")
	if err := <-done; err == nil {
		t.Fatal("the leftover with the tag was not killed")
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("another run's process with the same run id was killed: %v", err)
	}
	killLeftover(0, "", "") // a journal from before the tag: no one is killed by environment
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("an empty tag killed: %v", err)
	}
}

// TestJudge: what the agent's output says decides its outcome where its exit status
// cannot: the shell's "not found" and a CLI's failure before any work did not start; a
// failure reported with exit 0 is a crash; a timeout stays a timeout.
func TestJudge(t *testing.T) {
	stderr := filepath.Join(t.TempDir(), "agent.stderr")
	if err := os.WriteFile(stderr, []byte("sh: 1: no-such-agent: not found\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parse := func(s string) agentout.Run {
		r, _ := agentout.Parse(strings.NewReader(s))
		return r
	}
	notLoggedIn := parse(`{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","session_id":"s","total_cost_usd":0}`)
	failedAfterWork := parse(`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 529 Overloaded","session_id":"s","total_cost_usd":0.4,"usage":{"input_tokens":900}}`)
	for _, tc := range []struct {
		res    agentResult
		out    agentout.Run
		want   AgentOutcome
		detail string
	}{
		{agentResult{Outcome: AgentCrashed, ExitCode: 127, Detail: "exit status 127"}, agentout.Run{}, AgentCrashed, "did not start: sh: 1: no-such-agent: not found"},
		{agentResult{Outcome: AgentCrashed, ExitCode: 1, Detail: "exit status 1"}, notLoggedIn, AgentCrashed, "did not start: Not logged in · Please run /login"},
		{agentResult{Outcome: AgentOK}, failedAfterWork, AgentCrashed, "exited 0 but reported an error: API Error: 529 Overloaded"},
		{agentResult{Outcome: AgentCrashed, ExitCode: 1, Detail: "exit status 1"}, failedAfterWork, AgentCrashed, "exit status 1: API Error: 529 Overloaded"},
		{agentResult{Outcome: AgentTimeout, Detail: "stopped after 1m0s"}, notLoggedIn, AgentTimeout, "stopped after 1m0s"},
		{agentResult{Outcome: AgentOK}, parse(`{"type":"result","is_error":false,"result":"done","session_id":"s"}`), AgentOK, ""},
	} {
		got := judge(tc.res, tc.out, stderr)
		if got.Outcome != tc.want || got.Detail != tc.detail {
			t.Errorf("judge(%+v) = %s %q, want %s %q", tc.res, got.Outcome, got.Detail, tc.want, tc.detail)
		}
	}
}

// TestAgentGoneBeforeEnded: when the agent's phase ends, every process it left (here a
// setsid daemon and a double fork, holding a lock) is gone before the loop stops and
// waits for the commands it asked for (Ended): in the sandbox through its PID namespace,
// without it through its tag.
func TestAgentGoneBeforeEnded(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		a := agentIn(t, `setsid sh -c 'exec 9<lock; flock -s 9; : > a; exec sleep 1000' </dev/null >/dev/null 2>&1 &
(sh -c 'exec 9<lock; flock -s 9; : > b; exec sleep 1000' </dev/null >/dev/null 2>&1 &)
while [ ! -e a ] || [ ! -e b ]; do :; done`)
		lock := filepath.Join(a.Dir, "lock")
		if err := os.WriteFile(lock, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if sandboxed {
			if err := sandbox.Namespaces(); err != nil {
				t.Logf("no namespaces here: %v", err)
				continue
			}
			a.Sandbox = &sandbox.Policy{Write: []string{a.Dir}, Isolate: true}
		} else {
			a.Tag = "gone-" + t.Name()
			a.Env = append(a.Env, agentTagEnv+"="+a.Tag)
		}
		free := false
		a.Ended = func() { free = lockFree(t, lock) }
		if _, err := exec.LookPath("flock"); err != nil {
			t.Skip("needs flock")
		}
		res := a.run(context.Background())
		if res.Outcome != AgentOK || res.Err != nil {
			t.Fatalf("sandboxed=%v: %+v", sandboxed, res)
		}
		if !free {
			t.Errorf("sandboxed=%v: a process of the agent still held the lock when Ended ran", sandboxed)
		}
	}
}

// lockFree reports whether nobody holds path's flock.
func lockFree(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return true
}
