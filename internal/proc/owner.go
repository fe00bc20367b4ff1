package proc

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Owner names a process until the machine reboots: its pid and its start time in clock
// ticks since boot (0 where /proc is missing). Temporary files and folders carry their
// maker's Owner in their name (Tag), so that any later process can tell one whose maker
// is gone from one still in use, without a lock or a clock.
type Owner struct {
	PID        int
	StartTicks uint64
}

// self is this process's Owner, read once. A sync.Once, not a package-level sync.OnceValue,
// which allocates its closures at every start of every command.
var self struct {
	once  sync.Once
	owner Owner
}

// Self is this process's Owner.
func Self() Owner {
	self.once.Do(func() {
		self.owner = Owner{PID: os.Getpid()}
		if st, err := ReadStat(self.owner.PID); err == nil {
			self.owner.StartTicks = st.StartTicks
		}
	})
	return self.owner
}

// Tag spells o in a file name: "PID-TICKS".
func (o Owner) Tag() string {
	return strconv.Itoa(o.PID) + "-" + strconv.FormatUint(o.StartTicks, 10)
}

// ParseTag reads the Owner at the start of s, "PID-TICKS-REST" as a name made from a Tag
// and a random suffix is, and returns the rest; ok is false when s does not start so.
func ParseTag(s string) (o Owner, rest string, ok bool) {
	f := strings.SplitN(s, "-", 3)
	if len(f) != 3 {
		return Owner{}, "", false
	}
	pid, err1 := strconv.Atoi(f[0])
	ticks, err2 := strconv.ParseUint(f[1], 10, 64)
	if err1 != nil || err2 != nil || pid <= 0 {
		return Owner{}, "", false
	}
	return Owner{PID: pid, StartTicks: ticks}, f[2], true
}

// Gone reports whether o is provably not running: /proc has no such pid, or the process
// with that pid is a zombie or started at another time (the pid was reused). Without a
// start time, or without /proc, nothing is proved and Gone is false: a temporary file is
// then left to the rules that held before it carried its owner.
func (o Owner) Gone() bool {
	if o.StartTicks == 0 {
		return false
	}
	st, err := ReadStat(o.PID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return true
	case err != nil:
		return false
	}
	return st.State == 'Z' || st.State == 'X' || st.StartTicks != o.StartTicks
}
