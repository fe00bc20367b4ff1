package sandbox

import (
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// leader is what a reaping shim starts below itself, in a process group of its own, with
// SIGTERM and SIGINT forwarded to that group: the sandboxed shim (reap), or the command
// itself (nsInit, already inside the policy).
type leader struct {
	pid int
	fg  int // the terminal's fd when the leader took it, else -1

	sigs   chan os.Signal // SIGTERM and SIGINT this shim receives, forwarded by awaitExit
	endAll func(pid int)  // what a second one does
}

// startLeader starts exe with argv and env (nil: this process's) with attr (Setpgid is
// set here, and the terminal's foreground when this shim had it). Until the leader exits
// (awaitExit), the first SIGTERM or SIGINT this shim receives asks the leader's group; a
// second one calls endAll.
func startLeader(exe string, argv, env []string, attr *syscall.SysProcAttr, endAll func(pid int)) (*leader, error) {
	l := &leader{fg: foregroundTTY(), sigs: make(chan os.Signal, 4), endAll: endAll}
	signal.Notify(l.sigs, syscall.SIGTERM, syscall.SIGINT)
	attr.Setpgid = true
	if l.fg >= 0 {
		// Keep the terminal with the command, as if it ran without the shim.
		attr.Foreground, attr.Ctty = true, l.fg
	}
	if env == nil {
		env = os.Environ()
	}
	// syscall.ForkExec, not os.StartProcess: the shim needs only the pid (it waits with
	// waitid and wait4), and os.StartProcess's first call in a process forks a child
	// that exits at once, to learn whether pidfds work: one more process every task.
	pid, err := syscall.ForkExec(exe, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}, Sys: attr})
	if err != nil {
		return nil, err
	}
	l.pid = pid
	return l, nil
}

// awaitExit returns once the leader has exited, without reaping it: while it is a zombie
// its pid still answers, so nothing in the tree that waits for it to be gone (kill -0)
// can act before the rest is killed. Other children are reaped as they end. Meanwhile it
// forwards the signals this shim receives from the calling goroutine: in nsInit its
// thread is the one the leader was started from, the only one in the leader's Landlock
// domain (each thread of the init restricted itself into a domain of its own), and with
// signals scoped (ABI 6) the only one that may signal the tree.
func (l *leader) awaitExit() error {
	exited := make(chan error, 1)
	go func() { exited <- l.waitExit() }()
	asked := false
	for {
		select {
		case err := <-exited:
			return err
		case sig := <-l.sigs:
			if asked {
				l.endAll(l.pid)
				continue
			}
			asked = true
			syscall.Kill(-l.pid, sig.(syscall.Signal))
		}
	}
}

// waitExit is awaitExit's wait: it returns once the leader has exited, reaping every
// other child that ends before.
func (l *leader) waitExit() error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if wpid := siginfoPid(&info); wpid != l.pid {
			var ws unix.WaitStatus
			unix.Wait4(wpid, &ws, 0, nil)
			continue
		}
		return nil
	}
}

// reap collects the exited leader (no signal was forwarded since awaitExit) and gives the terminal
// back to this shim's group.
func (l *leader) reap() unix.WaitStatus {
	var ws unix.WaitStatus
	for {
		if _, err := unix.Wait4(l.pid, &ws, 0, nil); err != unix.EINTR {
			break
		}
	}
	if l.fg >= 0 {
		signal.Ignore(syscall.SIGTTOU)
		unix.IoctlSetPointerInt(l.fg, unix.TIOCSPGRP, unix.Getpgrp())
	}
	return ws
}
