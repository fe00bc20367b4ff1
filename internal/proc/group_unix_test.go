//go:build unix

package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func run(t *testing.T, ctx context.Context, script string, opts Options) (Result, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	opts.Stdout, opts.Stderr = &out, &errOut
	if opts.Grace == 0 {
		opts.Grace = 100 * time.Millisecond
	}
	p, err := Start(exec.Command("sh", "-c", script), opts)
	if err != nil {
		t.Fatal(err)
	}
	return p.Wait(ctx), out.String(), errOut.String()
}

func TestWaitExit(t *testing.T) {
	res, out, errOut := run(t, context.Background(), "echo out; echo err >&2; exit 3", Options{})
	if res.Err != nil || res.ExitCode != 3 || res.Signal != 0 || res.TimedOut || res.Cancelled {
		t.Errorf("result %+v", res)
	}
	if out != "out\n" || errOut != "err\n" {
		t.Errorf("stdout %q, stderr %q", out, errOut)
	}
	res, _, _ = run(t, context.Background(), "kill -9 $$", Options{})
	if res.Signal != syscall.SIGKILL {
		t.Errorf("killed leader: %+v", res)
	}
}

// alive says whether the pid written to file still runs a minute on: a killed process
// is gone (or a zombie) once the kernel has delivered the signal.
func alive(t *testing.T, file string) bool {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return false
		}
		if st, err := ReadStat(pid); err == nil && st.State == 'Z' {
			return false
		}
	}
	return true
}

// TestWaitStopsTheGroup: at the timeout, or when ctx ends, the leader and what it
// started in its group are ended; a child that ignores SIGTERM gets SIGKILL.
func TestWaitStopsTheGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child")
	script := "trap '' TERM; echo started; sleep 60 & echo $! > " + pidFile + "; wait"

	res, _, _ := run(t, context.Background(), script, Options{Timeout: time.Second})
	if !res.TimedOut || res.Cancelled {
		t.Errorf("timeout: %+v", res)
	}
	// On a machine too busy to start the child within the second, there is none to check.
	if _, err := os.Stat(pidFile); err == nil && alive(t, pidFile) {
		t.Errorf("the group's child outlived the timeout")
	}

	ctx, cancel := context.WithCancel(context.Background())
	os.Remove(pidFile)
	go func() {
		for {
			if data, err := os.ReadFile(pidFile); err == nil && len(data) > 0 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, out, _ := run(t, ctx, script, Options{})
	if out != "started\n" || !res.Cancelled || res.TimedOut {
		t.Errorf("cancel: %+v, stdout %q", res, out)
	}
	if alive(t, pidFile) {
		t.Errorf("the group's child outlived the cancellation")
	}
}

// TestWaitDrains: a process that left the group and keeps the output pipe open
// neither holds Wait up nor adds output after it.
func TestWaitDrains(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "escaped")
	script := "setsid sh -c 'echo $$ > " + pidFile + "; sleep 60; echo late' & echo early; " +
		"while [ ! -s " + pidFile + " ]; do sleep 0.01; done"
	res, out, _ := run(t, context.Background(), script, Options{Grace: time.Minute})
	if res.Err != nil || res.ExitCode != 0 || out != "early\n" {
		t.Errorf("result %+v, stdout %q", res, out)
	}
	data, _ := os.ReadFile(pidFile)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
		syscall.Kill(pid, syscall.SIGKILL) // it escaped the group: ours to end
	}
}

// TestStartWithFiles: without Stdout and Stderr the command writes where cmd says.
func TestStartWithFiles(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("sh", "-c", "echo to file; ps -o pgid= -p $$")
	cmd.Stdout = f
	p, err := Start(cmd, Options{Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res := p.Wait(context.Background()); res.Err != nil || res.ExitCode != 0 {
		t.Fatalf("result %+v", res)
	}
	data, _ := os.ReadFile(f.Name())
	lines := strings.Fields(string(data))
	if len(lines) != 3 || lines[2] != strconv.Itoa(p.Pid()) {
		t.Errorf("output %q, want the text and the group id %d", data, p.Pid())
	}
	if _, err := Start(exec.Command(filepath.Join(t.TempDir(), "missing")), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing program: %v", err)
	}
}

// TestBegin: a command whose clock restarts (Begin) after longer than its timeout is not
// timed out at once, and its duration counts from Begin: it ends when its stdin closes,
// well within the timeout counted from there.
func TestBegin(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command("cat")
	cmd.Stdin = r
	const timeout = 2 * time.Second
	p, err := Start(cmd, Options{Timeout: timeout, Grace: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(timeout + 500*time.Millisecond) // the clock Start started is past the timeout
	p.Begin()
	go func() {
		time.Sleep(100 * time.Millisecond)
		w.Close()
	}()
	res := p.Wait(context.Background())
	if res.TimedOut || res.Err != nil || res.ExitCode != 0 {
		t.Errorf("after Begin: %+v, want exit 0 within the timeout", res)
	}
	if res.Duration >= timeout {
		t.Errorf("duration %v counts the time before Begin", res.Duration)
	}
}
