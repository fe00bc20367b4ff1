// Package proc runs a command as its own process group and ends it as one: started in
// a new group, stopped with SIGTERM and after a grace SIGKILL to the whole group, waited
// for without a pid-reuse window, its output drained so that a process that escaped the
// group cannot hold hgate up or write after the end. It also reads /proc/<pid>/stat and
// finds the processes hgate has become the parent of. benchmark runs tasks with it, the
// loop its agent.
//
// Process groups and signals need Unix; /proc and the child subreaper need Linux.
// Elsewhere the package compiles and what it cannot do returns ErrNotSupported.
package proc

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// ErrNotSupported is returned where this platform lacks what a feature needs, e.g.
// "not supported on windows"; the repository lock and the sandbox say it too.
var ErrNotSupported = errors.New("not supported on " + runtime.GOOS)

// Options say how Start runs a command and how Wait ends it.
type Options struct {
	// Stdout and Stderr, when set, receive the command's output through pipes this package
	// owns (cmd.Stdout and cmd.Stderr must then be nil): Wait returns as soon as the
	// group is over even if an escaped process keeps a pipe open, having read what was
	// written until then. Unset, cmd.Stdout and cmd.Stderr are used as the caller set
	// them: nil or an *os.File.
	Stdout, Stderr io.Writer
	// Timeout, counted from the start, stops the group; 0: none.
	Timeout time.Duration
	// Grace is the time between SIGTERM and SIGKILL when the group is stopped, and the
	// most Wait spends draining the output.
	Grace time.Duration
	// Reaper says the leader is the sandbox shim with Reap: at the end of the grace it
	// gets a second SIGTERM (on which it kills its whole tree and exits) and another
	// grace, rather than a SIGKILL that would leave it no chance to reap.
	Reaper bool
}

// Result is how a process ended.
type Result struct {
	Err       error          // waiting failed (the other fields but Duration are then unset)
	ExitCode  int            // valid when Err == nil and Signal == 0
	Signal    syscall.Signal // non-zero when the leader died of a signal
	TimedOut  bool           // stopped at Options.Timeout
	Cancelled bool           // stopped because ctx ended
	Duration  time.Duration
}

// Process is a command started by Start.
type Process struct {
	cmd     *exec.Cmd
	opts    Options
	start   time.Time
	readers chan struct{} // closed when the pipe readers are done
	rfiles  []*os.File
}

// Begin restarts the clock Options.Timeout and Result.Duration count from, which Start
// set: for a command started ahead of its turn (a warm sandbox shim, which starts its work
// when told) whose time is its work's alone. Call it before Wait.
func (p *Process) Begin() { p.start = time.Now() }

// Pid is the leader's pid, which is also the group's id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
