//go:build linux

package benchmark

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/timescale"
)

// isolated is sandboxed with namespaces, where tasks start through warm shims.
func isolated(t *testing.T, dir string, bench config.Benchmark, write ...string) *Runner {
	t.Helper()
	r := sandboxed(t, dir, bench, write...)
	if err := sandbox.Namespaces(); err != nil {
		t.Skipf("no namespaces here: %v", err)
	}
	r.Sandbox.Isolate = true
	return r
}

// waitWarm is a task script's start: it waits (bounded) until the TMPDIR of another task
// exists beside its own, which a warm shim's start made, and says "warm" or "cold".
const waitWarm = `i=0; while [ $(ls -d "$TMPDIR"/../task-* | wc -l) -lt 2 ] && [ $i -lt 2000 ]; do sleep 0.01; i=$((i+1)); done
if [ $(ls -d "$TMPDIR"/../task-* | wc -l) -ge 2 ]; then echo warm >&2; else echo cold >&2; fi
`

// TestWarmStartCountsFromRelease: with one slot, the next task's shim starts while the
// first runs (its TMPDIR appears), and its recorded duration is its own, counted from the
// slot it was given, not from its shim's start 2 s before.
func TestWarmStartCountsFromRelease(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeScripts(t, dir, map[string]string{
		"first":  waitWarm + "sleep 2; echo 1\n",
		"second": "echo 1\n",
	})
	r := isolated(t, dir, config.Benchmark{Concurrency: 1})
	traces := filepath.Join(t.TempDir(), "traces")
	out := run(t, r, Request{Tasks: []string{"first", "second"}, TraceDir: traces})
	for _, id := range []string{"first", "second"} {
		if got := describe(out.Results[id]); got != "1" {
			t.Errorf("%s: %s, want 1", id, got)
		}
	}
	if trace, _ := os.ReadFile(filepath.Join(traces, "first.log")); !strings.Contains(string(trace), "warm") {
		t.Fatalf("the second task's shim was not started while the first ran: %q", trace)
	}
	if d := out.Results["second"].Duration; d >= 2*time.Second {
		t.Errorf("the second task's duration %v counts its warm shim's wait", d)
	}
}

// TestWarmCancelled: a run cancelled while the next task's shim is warm ends that shim
// (its command never runs, its TMPDIR is removed, no process is left) and reports the
// task as never started. Not parallel: it counts this process's children.
func TestWarmCancelled(t *testing.T) {
	dir, shared := t.TempDir(), t.TempDir()
	writeScripts(t, dir, map[string]string{
		"first":  waitWarm + "touch " + shared + "/first; exec sleep 1000\n",
		"second": "touch " + shared + "/second\n",
	})
	r := isolated(t, dir, config.Benchmark{Concurrency: 1}, shared)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	go func() {
		for deadline := time.Now().Add(timescale.D(20 * time.Second)); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(shared, "first")); err == nil {
				break
			}
		}
		cancel()
	}()
	out, err := r.Run(ctx, Request{Tasks: []string{"first", "second"}, TraceDir: filepath.Join(t.TempDir(), "traces")})
	if err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	if got := describe(out.Results["first"]); got != "infra null (cancelled)" {
		t.Errorf("first: %s", got)
	}
	if res, ok := out.Results["second"]; ok {
		t.Errorf("second, never released, has a result: %s", describe(res))
	}
	if _, err := os.Stat(filepath.Join(shared, "second")); err == nil {
		t.Error("the warm shim of a cancelled run ran its command")
	}
	if left, _ := filepath.Glob(filepath.Join(r.TempRoot, "task-*")); len(left) > 0 {
		t.Errorf("TMPDIRs left: %v", left)
	}
	if kids := proc.Children(os.Getpid()); len(kids) > 0 {
		t.Errorf("processes left after the run: %v", kids)
	}
}

// TestWarmAfterSetUp: the next task's shim starts warm only once the shim of the task
// begun before it has set up. While the first task's shim is paused in its set-up (after
// its mounts, before its Landlock domain), the second task's shim has not started (its
// TMPDIR, made at its start, is absent); once the first goes on, the second's starts warm
// while the first task runs (it pauses in turn), and both tasks run.
func TestWarmAfterSetUp(t *testing.T) {
	dir, pipes := t.TempDir(), t.TempDir()
	for _, n := range []string{"reached", "resume"} {
		if err := syscall.Mkfifo(filepath.Join(pipes, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeScripts(t, dir, map[string]string{"first": waitWarm + "echo 1\n", "second": "echo 1\n"})
	r := isolated(t, dir, config.Benchmark{Concurrency: 1})
	r.Env = append(os.Environ(), fault.Env+"=sandbox-mounted", fault.PauseEnv+"="+pipes)
	traces := filepath.Join(t.TempDir(), "traces")
	type ran struct {
		out *Outcome
		err error
	}
	done := make(chan ran, 1)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	go func() {
		out, err := r.Run(ctx, Request{Tasks: []string{"first", "second"}, TraceDir: traces})
		done <- ran{out, err}
	}()
	// paused waits until a shim pauses in its set-up (the run ending first is a failure:
	// each task's shim pauses once).
	paused := func(which string) {
		t.Helper()
		reached := make(chan error, 1)
		go func() {
			_, err := os.ReadFile(filepath.Join(pipes, "reached"))
			reached <- err
		}()
		select {
		case err := <-reached:
			if err != nil {
				t.Fatal(err)
			}
		case res := <-done:
			t.Fatalf("the run ended before the %s task's shim paused: %v %v", which, res.out, res.err)
		}
	}
	resume := func() {
		t.Helper()
		if err := os.WriteFile(filepath.Join(pipes, "resume"), []byte("go\n"), 0); err != nil {
			t.Fatal(err)
		}
	}
	paused("first")
	if tmps, _ := filepath.Glob(filepath.Join(r.TempRoot, "task-*")); len(tmps) != 1 {
		t.Errorf("while the first task's shim sets up: TMPDIRs %v, want its own alone (no warm shim started)", tmps)
	}
	resume()
	paused("second")
	resume()
	res := <-done
	if res.err != nil {
		t.Fatal(res.err)
	}
	for _, id := range []string{"first", "second"} {
		if got := describe(res.out.Results[id]); got != "1" {
			t.Errorf("%s: %s, want 1", id, got)
		}
	}
	if trace, _ := os.ReadFile(filepath.Join(traces, "first.log")); !strings.Contains(string(trace), "warm") {
		t.Errorf("the second task's shim did not start while the first ran: %q", trace)
	}
}
