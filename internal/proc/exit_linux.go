package proc

import (
	"os"

	"golang.org/x/sys/unix"
)

// watchExit blocks until p has exited without reaping it (WNOWAIT), so its pid, which
// is also its process group id, stays reserved while we kill the rest of the group. It
// returns a nil state: the caller reaps afterwards.
func watchExit(p *os.Process) (*os.ProcessState, error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return nil, nil
		}
	}
}

// fionread asks how many bytes a pipe holds.
const fionread = unix.TIOCINQ
