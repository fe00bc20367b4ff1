package sandbox

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// leader is what a reaping shim starts below itself, in a process group of its own, with
// SIGTERM and SIGINT forwarded to that group: the sandboxed shim (reap), or the command
// itself (nsInit, already inside the policy).
type leader struct {
	pid int
	fg  int // the terminal's fd when the leader took it, else -1

	// mu keeps signals from being forwarded once the leader is reaped, when its pid
	// (and group id) may belong to someone else.
	mu     sync.Mutex
	reaped bool
}

// startLeader starts exe with argv and env (nil: this process's) with attr (Setpgid is
// set here, and the terminal's foreground when this shim had it). The first SIGTERM or
// SIGINT this shim receives asks the leader's group; a second one calls endAll.
func startLeader(exe string, argv, env []string, attr *syscall.SysProcAttr, endAll func(pid int)) (*leader, error) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	attr.Setpgid = true
	l := &leader{fg: foregroundTTY()}
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
	go func() {
		asked := false
		for sig := range sigs {
			l.mu.Lock()
			switch {
			case l.reaped:
			case asked:
				endAll(l.pid)
			default:
				asked = true
				syscall.Kill(-l.pid, sig.(syscall.Signal))
			}
			l.mu.Unlock()
		}
	}()
	return l, nil
}

// awaitExit returns once the leader has exited, without reaping it: while it is a zombie
// its pid still answers, so nothing in the tree that waits for it to be gone (kill -0)
// can act before the rest is killed. Other children are reaped as they end.
func (l *leader) awaitExit() error {
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

// reap collects the exited leader (no signal is forwarded after) and gives the terminal
// back to this shim's group.
func (l *leader) reap() unix.WaitStatus {
	l.mu.Lock()
	l.reaped = true
	l.mu.Unlock()
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
