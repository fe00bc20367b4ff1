package lock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a second hgate process: with helperEnv set it
// runs helperMain instead of the tests (see startHelper).
const helperEnv = "HGATE_LOCK_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

// helperMain: "exit" ends at once (its pid is then a dead one); "hold:PATH"
// takes the lock, says "locked" on stdout and holds it until killed or until
// its stdin closes. It blocks in a read, not in select{}: with nothing else
// to run, the runtime calls select{} a deadlock and exits — dropping the lock
// under the test that believes it is held.
func helperMain(mode string) int {
	if mode == "exit" {
		return 0
	}
	path, ok := strings.CutPrefix(mode, "hold:")
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		return 2
	}
	l, err := Acquire(context.Background(), path, Options{Command: "helper"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("locked")
	io.Copy(io.Discard, os.Stdin) // until the test closes it or dies
	runtime.KeepAlive(l)          // an unreachable *os.File is closed by its finalizer
	return 0
}

func helperCmd(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Stderr = os.Stderr
	return cmd
}

// startHelper starts another process holding the lock at path and returns
// once it holds it.
func startHelper(t *testing.T, path string) *exec.Cmd {
	t.Helper()
	cmd := helperCmd(t, "hold:"+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe() // held open: the helper holds the lock while it is
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "locked\n" {
		t.Fatalf("helper did not take the lock: %q, %v", line, err)
	}
	return cmd
}

// deadPID returns the pid of a process that has exited and been reaped.
func deadPID(t *testing.T) int {
	t.Helper()
	cmd := helperCmd(t, "exit")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.ProcessState.Pid()
}

// notes is an Options.Notify that hands every line to the test, so a test
// can wait for "waiting for ..." instead of sleeping.
type notes chan string

func (n notes) Write(p []byte) (int, error) {
	n <- string(p)
	return len(p), nil
}

// noMore fails if a line arrived that the test did not expect.
func (n notes) noMore(t *testing.T) {
	t.Helper()
	select {
	case s := <-n:
		t.Errorf("unexpected notice %q", s)
	default:
	}
}

type result struct {
	l   *Lock
	err error
}

func acquireAsync(ctx context.Context, path string, opts Options) chan result {
	done := make(chan result, 1)
	go func() {
		l, err := Acquire(ctx, path, opts)
		done <- result{l, err}
	}()
	return done
}

func mustAcquire(t *testing.T, path, command string) *Lock {
	t.Helper()
	l, err := Acquire(context.Background(), path, Options{Command: command})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release() })
	return l
}

func readOwnerFile(t *testing.T, path string) owner {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := parseOwner(data)
	if !ok {
		t.Fatalf("lock file holds %q", data)
	}
	return o
}

func lockPath(t *testing.T) string { return filepath.Join(t.TempDir(), "hgate.lock") }

func TestAcquireWritesDetailsAndReleaseEmpties(t *testing.T) {
	path := lockPath(t)
	before := time.Now().Add(-time.Second)
	l, err := Acquire(context.Background(), path, Options{Command: "gate", Notify: notes(make(chan string, 4))})
	if err != nil {
		t.Fatal(err)
	}
	o := readOwnerFile(t, path)
	if o.PID != os.Getpid() || o.Command != "gate" || o.Started.Before(before) || o.Started.After(time.Now()) {
		t.Errorf("lock file holds %+v, want this process, gate, started now", o)
	}
	if want, err := startTicks(os.Getpid()); err == nil && o.StartTicks != want {
		t.Errorf("start_ticks = %d, want %d", o.StartTicks, want)
	}

	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Errorf("second release: %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil || len(data) != 0 {
		t.Errorf("after release the lock file should stay, empty: %q, %v", data, err)
	}

	// Released cleanly: the next holder has nothing to take over.
	n := notes(make(chan string, 4))
	l2, err := Acquire(context.Background(), path, Options{Command: "record", Notify: n})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release()
	n.noMore(t)
}

func TestNoWaitReportsHolder(t *testing.T) {
	path := lockPath(t)
	mustAcquire(t, path, "gate")
	held := readOwnerFile(t, path)

	_, err := Acquire(context.Background(), path, Options{Command: "bench"})
	var he *HeldError
	if !errors.As(err, &he) {
		t.Fatalf("got %v, want a HeldError", err)
	}
	if he.PID != os.Getpid() || he.Command != "gate" || !he.Started.Equal(held.Started) || he.Path != path {
		t.Errorf("got %+v, want pid %d, gate, started %v", he, os.Getpid(), held.Started)
	}
	if o := readOwnerFile(t, path); o != held {
		t.Errorf("a refused acquire changed the lock file: %+v, was %+v", o, held)
	}
}

func TestWaitBlocksUntilRelease(t *testing.T) {
	path := lockPath(t)
	l := mustAcquire(t, path, "gate")
	n := notes(make(chan string, 4))
	done := acquireAsync(context.Background(), path, Options{Wait: true, Notify: n, Command: "record"})

	want := fmt.Sprintf("waiting for hgate gate (pid %d, started ", os.Getpid())
	if got := <-n; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, ") to finish...\n") {
		t.Errorf("notice %q, want %q...", got, want)
	}
	select {
	case r := <-done:
		t.Fatalf("acquired while held: %v", r.err)
	default:
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.l.Release()
	if o := readOwnerFile(t, path); o.Command != "record" {
		t.Errorf("lock file names %q, want record", o.Command)
	}
	n.noMore(t) // a clean release is no takeover
}

func TestCancelWhileWaiting(t *testing.T) {
	path := lockPath(t)
	l := mustAcquire(t, path, "loop")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := notes(make(chan string, 4))
	done := acquireAsync(ctx, path, Options{Wait: true, Notify: n, Command: "gate"})
	<-n // waiting
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %v, %v; want context.Canceled", r.l, r.err)
	}
	if !strings.Contains(r.err.Error(), "waiting for hgate loop (pid ") {
		t.Errorf("error %q does not say what it waited for", r.err)
	}
	// The holder still holds; once it releases the lock is free again.
	var he *HeldError
	if _, err := Acquire(context.Background(), path, Options{}); !errors.As(err, &he) {
		t.Errorf("after a cancelled wait: %v, want the lock still held", err)
	}
	l.Release()
	mustAcquire(t, path, "gate")
}

// A second real process holds the lock and is killed with SIGKILL: it never
// releases, the kernel drops its flock, and the waiter takes over and says so.
func TestKilledHolderIsTakenOver(t *testing.T) {
	path := lockPath(t)
	cmd := startHelper(t, path)
	pid := cmd.Process.Pid

	var he *HeldError
	if _, err := Acquire(context.Background(), path, Options{}); !errors.As(err, &he) || he.PID != pid || he.Command != "helper" {
		t.Fatalf("got %v (%+v), want held by helper pid %d", err, he, pid)
	}

	n := notes(make(chan string, 4))
	done := acquireAsync(context.Background(), path, Options{Wait: true, Notify: n, Command: "gate"})
	if got, want := <-n, fmt.Sprintf("waiting for hgate helper (pid %d, started ", pid); !strings.HasPrefix(got, want) {
		t.Errorf("notice %q, want %q...", got, want)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet on purpose: the waiter may see the pid as a zombie.
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.l.Release()
	if got, want := <-n, fmt.Sprintf("took over a stale lock from pid %d (no longer running)\n", pid); got != want {
		t.Errorf("notice %q, want %q", got, want)
	}
	if o := readOwnerFile(t, path); o.PID != os.Getpid() || o.Command != "gate" {
		t.Errorf("lock file holds %+v after takeover", o)
	}
}

// A lock file left behind by a holder that ended without releasing; the
// flock itself is free.
func TestLeftoverLockFile(t *testing.T) {
	dead := deadPID(t)
	self := os.Getpid()
	ticks, ticksErr := startTicks(self)
	started := time.Date(2026, 11, 22, 3, 12, 0, 0, time.UTC)
	details := func(o owner) string {
		b, _ := json.Marshal(o)
		return string(b)
	}
	tests := []struct {
		name    string
		content string
		linux   bool // needs process start times
		want    string
	}{
		{name: "dead pid", content: details(owner{PID: dead, Command: "gate", Started: started}),
			want: fmt.Sprintf("took over a stale lock from pid %d (no longer running)\n", dead)},
		{name: "recycled pid", linux: true, content: details(owner{PID: self, StartTicks: ticks + 1, Command: "gate", Started: started}),
			want: fmt.Sprintf("took over a stale lock from pid %d (no longer running)\n", self)},
		{name: "live process that let go", linux: true, content: details(owner{PID: self, StartTicks: ticks, Command: "gate", Started: started}),
			want: fmt.Sprintf("took over a stale lock from pid %d (it no longer holds the lock)\n", self)},
		{name: "unreadable", content: `{"pid": 12`,
			want: "took over a stale lock (PATH held unreadable details)\n"},
		{name: "no pid", content: `{"command": "gate"}`,
			want: "took over a stale lock (PATH held unreadable details)\n"},
		{name: "empty", content: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.linux && (runtime.GOOS != "linux" || ticksErr != nil) {
				t.Skip("process start times need /proc")
			}
			path := lockPath(t)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			var got strings.Builder
			l, err := Acquire(context.Background(), path, Options{Notify: &got, Command: "record"})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			if want := strings.ReplaceAll(tt.want, "PATH", path); got.String() != want {
				t.Errorf("notice %q, want %q", got.String(), want)
			}
			if o := readOwnerFile(t, path); o.PID != self || o.Command != "record" {
				t.Errorf("lock file holds %+v after takeover", o)
			}
		})
	}
}

func TestSymlinkRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hgate.lock")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	_, err := Acquire(context.Background(), path, Options{})
	if err == nil || err.Error() != "open lock file "+path+": it is a symbolic link; remove it" {
		t.Errorf("got %v, want a refusal naming the symlink", err)
	}
	if data, _ := os.ReadFile(target); string(data) != "keep" {
		t.Errorf("symlink target changed to %q", data)
	}
}

func TestHeldErrorText(t *testing.T) {
	started := time.Date(2026, 11, 22, 4, 12, 0, 0, time.FixedZone("CET", 3600))
	tests := []struct {
		err  HeldError
		want string
	}{
		{HeldError{PID: 123, Command: "gate", Started: started, Path: "/r/.git/hgate.lock"},
			"another hgate is running here: hgate gate (pid 123, started 2026-11-22 03:12:00 UTC); wait for it or stop it (--no-wait refused to wait)"},
		{HeldError{PID: 7, Started: started},
			"another hgate is running here: hgate (pid 7, started 2026-11-22 03:12:00 UTC); wait for it or stop it (--no-wait refused to wait)"},
		{HeldError{Path: "/r/.git/hgate.lock"},
			"another hgate is running here (it holds /r/.git/hgate.lock); wait for it or stop it (--no-wait refused to wait)"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}

// A full disk's error names the lock file once, by the path hgate names it by.
func TestWriteErrorNamesTheFileOnce(t *testing.T) {
	err := writeError(".git/hgate.lock", &fs.PathError{Op: "write", Path: "/repo/.git/hgate.lock", Err: syscall.ENOSPC})
	if got, want := err.Error(), "write lock file .git/hgate.lock: no space left on device"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("%v is not ENOSPC", err)
	}
}
