//go:build unix

package proc

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Start starts cmd in a new session, and so a new process group, without a controlling
// terminal: an agent or a task that had the user's terminal as its own could push input
// into it (ioctl TIOCSTI, which a kernel with legacy_tiocsti allows on the caller's
// controlling terminal), which the user's shell then runs as the user, outside every
// sandbox, once hgate exits. Without opts.Stdout and Stderr the output goes where cmd
// says; a nil cmd.Stdin is /dev/null.
func Start(cmd *exec.Cmd, opts Options) (*Process, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	p := &Process{cmd: cmd, opts: opts, readers: make(chan struct{})}
	var outs []io.Writer
	var wfiles []*os.File
	closeAll := func() {
		for _, f := range append(wfiles, p.rfiles...) {
			f.Close()
		}
	}
	if opts.Stdout != nil || opts.Stderr != nil {
		outs = []io.Writer{opts.Stdout, opts.Stderr}
		for i, w := range outs {
			if w == nil {
				outs[i] = io.Discard
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
	}
	if err := onStarterThread(cmd.Start); err != nil {
		closeAll()
		return nil, err
	}
	p.start = time.Now()
	// Only the child may hold the write ends now, so EOF means every process that
	// inherited them is gone.
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

// Wait waits for the leader to exit, stopping the group at the timeout or when ctx
// ends (SIGTERM, then SIGKILL after the grace), then kills whatever is left in the group
// and collects the output.
func (p *Process) Wait(ctx context.Context) Result {
	var res Result
	pid := p.cmd.Process.Pid
	exited := make(chan struct{})
	var state *os.ProcessState
	var err error
	go func() {
		state, err = watchExit(p.cmd.Process)
		close(exited)
	}()

	var timer <-chan time.Time
	if p.opts.Timeout > 0 {
		t := time.NewTimer(p.opts.Timeout - time.Since(p.start))
		defer t.Stop()
		timer = t.C
	}
	select {
	case <-exited:
	case <-timer:
		res.TimedOut = !closed(exited)
	case <-ctx.Done():
		res.Cancelled = !closed(exited)
	}
	if res.TimedOut || res.Cancelled {
		syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(p.opts.Grace):
			if p.opts.Reaper {
				// A second SIGTERM makes the shim kill the whole tree and exit; a
				// SIGKILL would leave it no chance to reap what the task started.
				syscall.Kill(-pid, syscall.SIGTERM)
				select {
				case <-exited:
				case <-time.After(p.opts.Grace):
					// The shim has not ended its tree: stalled, or slow on a loaded
					// machine. The SIGKILL below would hand that tree to init, so end
					// it from here while the shim is still its subreaper.
					KillBelow(pid)
				}
			}
		}
	}
	// On Linux the leader is still an unreaped zombie here, so its pid (the group id)
	// cannot have been reused: the kill reaches only our group. Stragglers get no grace:
	// the command is over.
	syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
	if state == nil && err == nil {
		state, err = p.cmd.Process.Wait()
	}
	res.Duration = time.Since(p.start)
	p.drain()
	if err != nil {
		res.Err = fmt.Errorf("wait: %w", err)
		return res
	}
	ws, _ := state.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		res.Signal = ws.Signal()
	} else {
		res.ExitCode = ws.ExitStatus()
	}
	return res
}

// drain reads what the command wrote and stops there. It runs once the command is
// over: its leader has exited and its group is dead (with a sandbox shim, its whole
// tree). Whatever is still buffered in the pipes was written by then and is read; once
// they are empty we stop reading, so a process that escaped the group (setsid) and kept
// a pipe cannot add a line later, say a reward after the checker exited, nor hang the
// run.
func (p *Process) drain() {
	// A process outside the group that keeps writing could keep the pipes full
	// forever: the grace bounds the wait.
	deadline := time.Now().Add(p.opts.Grace)
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

// KillGroup sends SIGKILL to the process group pgid.
func KillGroup(pgid int) error { return syscall.Kill(-pgid, syscall.SIGKILL) }

// Kill sends SIGKILL to the process pid.
func Kill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// starts carries Start's forks to one OS thread that never ends. A child's parent-death
// signal (the sandbox's shim asks for SIGKILL) is sent when the thread that forked it
// ends, not the process (go.dev/issue/27505); Go ends a thread only when a goroutine
// locked to it returns, which this one never does.
// The channel is made with the thread: made at package init, it cost every command's start
// an allocation.
var (
	starts    chan func()
	startOnce sync.Once
)

func onStarterThread(start func() error) error {
	startOnce.Do(func() {
		starts = make(chan func())
		go func() {
			runtime.LockOSThread()
			for f := range starts {
				f()
			}
		}()
	})
	done := make(chan error, 1)
	starts <- func() { done <- start() }
	return <-done
}
