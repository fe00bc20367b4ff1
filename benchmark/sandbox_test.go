//go:build unix

package benchmark

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
)

func sandboxed(t *testing.T, dir string, bench config.Benchmark, write ...string) *Runner {
	t.Helper()
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	r := runner(dir, bench)
	r.TempRoot = t.TempDir()
	r.Sandbox = &sandbox.Policy{Write: write}
	return r
}

// TestRunSandboxed: a sandboxed task writes only its private TMPDIR and the
// writable folders, and whatever it starts, setsid daemons included, is gone
// when its result is in.
func TestRunSandboxed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pids := t.TempDir()
	os.Mkdir(filepath.Join(dir, "build"), 0o755)
	writeScripts(t, dir, map[string]string{
		"room":    "echo x >> room.sh.log && echo 1 || echo 0\n",
		"build":   "echo x > build/out && echo 1\n",
		"tmp":     "echo tmp=$TMPDIR >&2; echo x > \"$TMPDIR/f\" && echo 1\n",
		"tmp2":    "echo tmp=$TMPDIR >&2; ls \"$TMPDIR\" | wc -l\n",
		"outside": "echo x > " + pids + "/leak && echo 1 || echo 0\n",
		"daemon": "setsid sh -c 'echo $$ > $TMPDIR/d.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &\n" +
			"while [ ! -s $TMPDIR/d.pid ]; do :; done; echo pid=$(cat $TMPDIR/d.pid) >&2; echo 1\n",
	})
	r := sandboxed(t, dir, config.Benchmark{Concurrency: 1}, filepath.Join(dir, "build"))
	out := run(t, r, Request{Tasks: []string{"room", "build", "tmp", "tmp2", "outside", "daemon"}, TraceDir: filepath.Join(pids, "traces")})
	for id, want := range map[string]string{"room": "0", "build": "1", "tmp": "1", "tmp2": "0", "outside": "0", "daemon": "1"} {
		if got := describe(out.Results[id]); got != want {
			t.Errorf("%s: %s, want %s", id, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "room.sh.log")); err == nil {
		t.Error("a task wrote into the room")
	}
	traces := filepath.Join(pids, "traces")
	a, b := traceValue(t, traces, "tmp", "tmp"), traceValue(t, traces, "tmp2", "tmp")
	if a == "" || a == b {
		t.Errorf("TMPDIR not private per task: %q and %q", a, b)
	}
	if _, err := os.Stat(a); err == nil {
		t.Error("a task's TMPDIR outlived it")
	}
	pid, err := strconv.Atoi(traceValue(t, traces, "daemon", "pid"))
	if err != nil {
		t.Fatal(err)
	}
	if !dead(pid) {
		t.Errorf("the daemon (pid %d) outlived its task", pid)
	}
}

// traceValue returns what follows "key=" on a line of a task's trace.
func traceValue(t *testing.T, traces, id, key string) string {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(traces, id+".log"))
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= in the trace of %s: %q", key, id, data)
	return ""
}

// TestRunSandboxedLateReward: code under test keeps the checker's stdout
// (/proc/<pid>/fd/1) and a setsid child writes a reward once the checker has
// exited. The task scores what the checker said.
func TestRunSandboxedLateReward(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScripts(t, dir, map[string]string{
		"late": "leader=$$\n" +
			"setsid sh -c 'exec 3>/proc/'$leader'/fd/1; while kill -0 '$leader' 2>/dev/null; do :; done; echo 1 >&3' </dev/null >/dev/null 2>&1 &\n" +
			"echo 0\n",
	})
	// Unsandboxed, the late line wins within the drain window of old; the
	// drain now stops at the pipes' last byte, which is a race the daemon
	// can still win, so only the sandboxed run is asserted.
	r := sandboxed(t, dir, config.Benchmark{TaskTimeout: time.Minute})
	for range 5 {
		out := run(t, r, Request{Tasks: []string{"late"}})
		if got := describe(out.Results["late"]); got != "0" {
			t.Fatalf("late: %s, want 0 (the checker's reward)", got)
		}
	}
}

// TestRunSandboxedTimeout: a sandboxed task that ignores SIGTERM and left a
// setsid daemon is ended whole on timeout.
func TestRunSandboxedTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScripts(t, dir, map[string]string{
		"hang": "setsid sh -c 'trap \"\" TERM; echo $$ > hang.pid.tmp; mv hang.pid.tmp hang.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &\n" +
			"while [ ! -s hang.pid ]; do sleep 0.01; done\n" +
			"trap '' TERM; sleep 1000; sleep 1000\n",
	})
	// The timeout must outlast the daemon's start, which a loaded machine slows: a run
	// whose timeout came first (no pid written) is run again with twice the time.
	for timeout := 300 * time.Millisecond; ; timeout *= 2 {
		r := sandboxed(t, dir, config.Benchmark{TaskTimeout: timeout}, dir)
		out := run(t, r, Request{Tasks: []string{"hang"}})
		if got, want := describe(out.Results["hang"]), "null (timed out after "+timeout.String()+")"; got != want {
			t.Errorf("hang: %s, want %s", got, want)
		}
		if _, err := os.Stat(filepath.Join(dir, "hang.pid")); err == nil || timeout > time.Minute {
			break
		}
	}
	// On timeout the shim's second SIGTERM sends SIGKILL to the whole tree; on a loaded
	// machine the daemon may take a moment to die of it (assertDead waits for that, and
	// fails only when no SIGKILL came).
	assertDead(t, "the daemon", readPid(t, filepath.Join(dir, "hang.pid")))
}

// TestRunSandboxedStalledShim: a task's reaping shim that does not end its tree in time
// (here stopped; on a loaded machine, not scheduled within the grace) is killed, and the
// setsid daemon the task left dies too: it is not handed to init. The run is cancelled
// once the shim is stopped, so nothing here depends on timing.
func TestRunSandboxedStalledShim(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScripts(t, dir, map[string]string{
		"stall": "setsid sh -c 'trap \"\" TERM; echo $$ > d.pid.tmp; mv d.pid.tmp d.pid; exec sleep 1000' </dev/null >/dev/null 2>&1 &\n" +
			"while [ ! -s d.pid ]; do sleep 0.01; done\n" +
			"echo $PPID > shim.pid.tmp; mv shim.pid.tmp shim.pid\n" +
			"trap '' TERM; sleep 1000; sleep 1000\n",
	})
	r := sandboxed(t, dir, config.Benchmark{TaskTimeout: hangGuard}, dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() {
		defer cancel()
		shim := readPidQuiet(filepath.Join(dir, "shim.pid"))
		st, err := proc.ReadStat(shim)
		if err == nil && st.PPid != os.Getpid() {
			err = fmt.Errorf("pid %d is not the runner's child (its parent is %d)", shim, st.PPid)
		}
		if err == nil {
			err = syscall.Kill(shim, syscall.SIGSTOP)
		}
		stopped <- err
	}()
	r.Run(ctx, Request{Tasks: []string{"stall"}}) // cancelled: its outcome is not the point
	if err := <-stopped; err != nil {
		t.Fatalf("stopping the shim: %v", err)
	}
	assertDead(t, "the daemon", readPid(t, filepath.Join(dir, "d.pid")))
}

// readPidQuiet is readPid for a goroutine (no t): -1 when no pid came within the guard.
func readPidQuiet(path string) int {
	for deadline := time.Now().Add(hangGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(path)
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			return pid
		}
	}
	return -1
}
