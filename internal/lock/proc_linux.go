package lock

import "github.com/hgate/hgate/internal/proc"

// startTicks returns a process's start time in clock ticks since boot, field
// 22 of /proc/<pid>/stat. Together with the pid it names a process uniquely
// until reboot, so a recycled pid is not taken for the lock's holder.
func startTicks(pid int) (uint64, error) {
	st, err := readStat(pid)
	return st.ticks, err
}

// exited reports a process that has died but not yet been reaped: a zombie
// still answers kill(pid, 0), yet its locks are already gone.
func exited(pid int) bool {
	st, err := readStat(pid)
	return err == nil && (st.state == 'Z' || st.state == 'X')
}

type procStat struct {
	state byte
	ticks uint64
}

func readStat(pid int) (procStat, error) {
	st, err := proc.ReadStat(pid)
	return procStat{state: st.State, ticks: st.StartTicks}, err
}
