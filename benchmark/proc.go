package benchmark

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hgate/hgate/internal/sandbox"
)

// KillGrace is how long a process group has between SIGTERM and SIGKILL
// when a task times out or is cancelled. It is a variable so tests (here
// and in packages that drive a Runner) can shorten it.
var KillGrace = 2 * time.Second

// procSpec describes one command to run in its own process group.
type procSpec struct {
	argv    []string
	dir     string
	env     []string
	timeout time.Duration // 0: none
	stdout  io.Writer
	stderr  io.Writer
	sandbox *sandbox.Policy // nil: unsandboxed
}

// procResult is how a process ended.
type procResult struct {
	startErr  error
	exitCode  int            // valid when startErr == nil and signal == 0
	signal    syscall.Signal // non-zero when the leader died of a signal
	timedOut  bool
	cancelled bool
	duration  time.Duration
}

// proc is a started command. Its stdout and stderr are pipes we own (not
// exec's copying goroutines), so Wait returns as soon as the leader exits
// even when a grandchild still holds a pipe open; the group is then killed,
// which closes the pipes, and the readers drain.
type proc struct {
	cmd     *exec.Cmd
	start   time.Time
	timeout time.Duration
	readers chan struct{} // closed when both pipe readers are done
	rfiles  []*os.File
	reaped  bool // a sandbox shim reaps the whole tree before it exits
}

// startProc starts spec in a new process group. stdin is /dev/null: a task
// in a background group that read the terminal would be stopped by SIGTTIN.
func startProc(spec procSpec) (*proc, error) {
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if spec.sandbox != nil {
		if err := sandbox.Wrap(cmd, *spec.sandbox); err != nil {
			return nil, err
		}
	}

	p := &proc{cmd: cmd, timeout: spec.timeout, readers: make(chan struct{}), reaped: spec.sandbox != nil && spec.sandbox.Reap}
	var wfiles []*os.File
	closeAll := func() {
		for _, f := range append(wfiles, p.rfiles...) {
			f.Close()
		}
	}
	outs := []io.Writer{spec.stdout, spec.stderr}
	for i, w := range outs {
		if w == nil {
			w = io.Discard
			outs[i] = w
		}
		r, wf, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("create pipe: %w", err)
		}
		p.rfiles = append(p.rfiles, r)
		wfiles = append(wfiles, wf)
	}
	cmd.Stdout, cmd.Stderr = wfiles[0], wfiles[1]

	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	p.start = time.Now()
	// Only the child may hold the write ends now, so EOF means every
	// process that inherited them is gone.
	for _, f := range wfiles {
		f.Close()
	}
	done := make(chan struct{}, len(outs))
	for i, w := range outs {
		go func() {
			io.Copy(w, p.rfiles[i])
			done <- struct{}{}
		}()
	}
	go func() {
		for range outs {
			<-done
		}
		close(p.readers)
	}()
	return p, nil
}

// wait waits for the leader to exit, enforcing the timeout and ctx, then
// kills whatever is left in the group and collects the output.
func (p *proc) wait(ctx context.Context) procResult {
	var res procResult
	pid := p.cmd.Process.Pid
	exited := make(chan struct{})
	var state *os.ProcessState
	var err error
	go func() {
		state, err = watchExit(p.cmd.Process)
		close(exited)
	}()

	var timer <-chan time.Time
	if p.timeout > 0 {
		t := time.NewTimer(p.timeout - time.Since(p.start))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-exited:
	case <-timer:
		res.timedOut = !closed(exited)
	case <-ctx.Done():
		res.cancelled = !closed(exited)
	}
	if res.timedOut || res.cancelled {
		syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(KillGrace):
			if p.reaped {
				// A second SIGTERM makes the shim kill the whole tree and exit; a
				// SIGKILL would leave it no chance to reap what the task started.
				syscall.Kill(-pid, syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(KillGrace):
				}
			}
		}
	}
	// On Linux the leader is still an unreaped zombie here, so its pid
	// (the group id) cannot have been reused: the kill reaches only our
	// group. Stragglers get no grace: the task is over.
	syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
	if state == nil && err == nil {
		state, err = p.cmd.Process.Wait()
	}
	res.duration = time.Since(p.start)
	p.drain()
	if err != nil {
		res.startErr = fmt.Errorf("wait: %w", err)
		return res
	}
	ws, _ := state.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		res.signal = ws.Signal()
	} else {
		res.exitCode = ws.ExitStatus()
	}
	return res
}

// drain reads what the task wrote and stops there. It runs once the task is
// over: its leader has exited and its group is dead (with a sandbox shim, its
// whole tree). Whatever is still buffered in the pipes was written by then
// and is read; once they are empty we stop reading, so a process that
// escaped the group (setsid) and kept a pipe cannot add a line later, say a
// reward after the checker exited, nor hang the run.
func (p *proc) drain() {
	// A process outside the group that keeps writing could keep the pipes full
	// forever: the grace bounds the wait.
	deadline := time.Now().Add(KillGrace)
	for _, f := range p.rfiles {
		for !closed(p.readers) && pending(f) > 0 && time.Now().Before(deadline) {
			select {
			case <-p.readers:
			case <-time.After(time.Millisecond): // the reader is copying; look again
			}
		}
		if f.SetReadDeadline(time.Now()) != nil {
			f.Close() // not pollable: closing ends the read as well
		}
	}
	<-p.readers
	for _, f := range p.rfiles {
		f.Close()
	}
}

// pending is how many bytes wait in the pipe f; 0 when that cannot be known.
func pending(f *os.File) int {
	n := 0
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			n, _ = unix.IoctlGetInt(int(fd), fionread)
		})
	}
	return n
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// formatDuration prints d the way a user writes it in hgate.yaml: 20m, not
// 20m0s.
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
