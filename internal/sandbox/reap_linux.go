package sandbox

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hgate/hgate/internal/proc"
)

// reap runs the command as a sandboxed leader below this unsandboxed shim, then kills
// whatever the tree left behind and exits as the leader did. The shim stays outside the
// Landlock domain so that, where signals are scoped, the tree cannot kill it to escape.
//
// unset passes on to the leader, which unsets those variables before the exec: they are
// this shim's and the leader shim's alone (see shimOnly).
//
// death is the fd of the death pipe (see WrapDeath), 0 for none: used with Isolate alone,
// where the shim cannot die of its leader's signal.
func reap(p Policy, unset []string, death int, path string, argv []string) int {
	if p.Isolate {
		return nsInit(p, unset, death, path, argv)
	}
	if _, err := Available(); err != nil {
		return fail(err.Error())
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail("become subreaper: " + err.Error())
	}
	p.Reap = false
	enc, err := encodePolicy(p, unset)
	if err != nil {
		return fail(err.Error())
	}
	shimArgv := append([]string{shimName, enc, "--", path}, argv...)
	l, err := startLeader("/proc/self/exe", shimArgv, nil, &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}, killTree)
	if err != nil {
		return fail("start: " + err.Error())
	}
	if err := l.awaitExit(); err != nil {
		return fail("wait: " + err.Error())
	}
	killTree(l.pid)
	ws := l.reap()
	killTree(-1)
	if ws.Signaled() {
		dieOf(ws.Signal())
	}
	return ws.ExitStatus()
}

// siginfoPid reads si_pid of a SIGCHLD siginfo: the first field of the union that follows
// signo, errno and code (aligned to 8 bytes on 64-bit systems).
func siginfoPid(info *unix.Siginfo) int {
	off := uintptr(12)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	return int(*(*int32)(unsafe.Add(unsafe.Pointer(info), off)))
}

// foregroundTTY returns the fd of the terminal when this shim's process group has it in the
// foreground, or -1.
func foregroundTTY() int {
	for _, fd := range []int{0, 1, 2} {
		pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
		if err == nil && pg == unix.Getpgrp() {
			return fd
		}
	}
	return -1
}

// killTree kills every descendant of this shim and, when leader > 0, the leader's group
// first; with leader < 0 it also reaps until no child is left. Orphans were reparented to
// us (we are a subreaper), so "no child left" means the whole tree is gone.
func killTree(leader int) {
	if leader > 0 {
		syscall.Kill(-leader, syscall.SIGKILL)
		if kids, ok := children(); ok && len(kids) == 1 && kids[0] == leader {
			return // the common case: the leader left nothing behind
		}
		for _, d := range descendants() {
			syscall.Kill(d, syscall.SIGKILL)
		}
		return
	}
	pause := time.Millisecond
	scanned := false
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil: // ECHILD: nothing left
			return
		case wpid > 0:
			scanned = false // a death may have reparented others to us: look again
			continue
		}
		if !scanned {
			for _, d := range descendants() {
				syscall.Kill(d, syscall.SIGKILL)
			}
			scanned = true
			pause = time.Millisecond
			continue
		}
		// Killed children take a moment to die; poll gently, never block on a
		// child we might have missed.
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
		scanned = false
	}
}

// children lists this process's direct children from /proc/self/task/*/children; ok is
// false where the kernel does not offer that file.
func children() (kids []int, ok bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return nil, false
	}
	for _, t := range tasks {
		data, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			return nil, false
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				kids = append(kids, pid)
			}
		}
	}
	return kids, true
}

// descendants lists every process below this one, from /proc.
func descendants() []int { return proc.Descendants(os.Getpid()) }

// dieOf ends this process with sig, so the caller sees what the leader died of. The Go
// runtime's handler is replaced by the default action first.
func dieOf(sig syscall.Signal) {
	var act [4]uintptr // struct sigaction with SIG_DFL, no flags, empty mask
	unix.Syscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	var set unix.Sigset_t
	set.Val[(int(sig)-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	syscall.Kill(os.Getpid(), sig)
	time.Sleep(time.Second)
	os.Exit(128 + int(sig))
}

func closeOnExec(fd int) { syscall.CloseOnExec(fd) }
