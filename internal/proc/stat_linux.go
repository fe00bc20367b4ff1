package proc

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReadStat reads /proc/<pid>/stat.
func ReadStat(pid int) (Stat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(data)
}

// All lists the processes in /proc.
func All() []int { return pids() }

// pids lists the processes in /proc.
func pids() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Children lists the processes whose parent is ppid.
func Children(ppid int) []int {
	var out []int
	for _, pid := range pids() {
		if st, err := ReadStat(pid); err == nil && st.PPid == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// Descendants lists every process below pid, parents before children, from
// one pass over /proc.
func Descendants(pid int) []int {
	kids := map[int][]int{}
	for _, p := range pids() {
		if st, err := ReadStat(p); err == nil {
			kids[st.PPid] = append(kids[st.PPid], p)
		}
	}
	var out []int
	for queue := []int{pid}; len(queue) > 0; queue = queue[1:] {
		for _, k := range kids[queue[0]] {
			out = append(out, k)
			queue = append(queue, k)
		}
	}
	return out
}

// KillBelow sends SIGKILL to every process below pid, pass after pass until a pass finds
// none it has not killed yet. It is for a sandbox shim that did not end its own tree in
// time: while the shim lives (stopped or not) it is the subreaper of that tree, so a
// process orphaned by a kill here is found below it on the next pass; once the shim is
// killed they would go to init, out of reach. A killed process cannot fork any more, so
// the passes end; they do not wait for the killed to die (a process in an uninterruptible
// sleep dies later, of the signal it already has).
func KillBelow(pid int) {
	killed := map[int]uint64{} // pid → start time: a reused pid is a new process
	for {
		fresh := 0
		below := Descendants(pid)
		tree := map[int]bool{pid: true}
		for _, d := range below {
			tree[d] = true
		}
		// Children before their parents: a process is killed while its parent still
		// is, so it is never orphaned out of the tree first (to init, where pid is not
		// a subreaper) and then skipped as a stranger.
		for _, d := range slices.Backward(below) {
			// Read again just before the kill: a process whose parent is no longer in
			// the tree is a pid reused since the scan, not ours to kill.
			st, err := ReadStat(d)
			if err != nil || st.State == 'Z' || st.State == 'X' || !tree[st.PPid] {
				continue
			}
			if start, ok := killed[d]; ok && start == st.StartTicks {
				continue
			}
			_ = syscall.Kill(d, syscall.SIGKILL)
			killed[d] = st.StartTicks
			fresh++
		}
		if fresh == 0 {
			return
		}
	}
}

// BecomeSubreaper makes this process the parent of every orphaned descendant
// (PR_SET_CHILD_SUBREAPER), so a daemon a child started with setsid is still found by
// ReapOrphans.
func BecomeSubreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// ReapOrphans kills and reaps the processes whose parent is this process now: the
// descendants of an ended command that were re-parented here (BecomeSubreaper), with
// their groups. It is for a point where this process has no child of its own running
// but those it Owns.
func ReapOrphans() {
	self := os.Getpid()
	quiet := 0
	for range 200 {
		pids := slices.DeleteFunc(Children(self), isOwned)
		if len(pids) == 0 {
			if quiet++; quiet >= 3 {
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		quiet = 0
		for _, pid := range pids {
			// Its own group or session may hold more processes.
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range pids {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}
}

// KillByEnv kills every process but this one whose environment holds kv (KEY=value),
// a tag every process of a tree inherits: what is left of it after its parent died,
// daemons included.
func KillByEnv(kv string) error {
	killByEnv(kv, nil)
	return nil
}

// EndByEnv kills as KillByEnv does until no such process is left, for at most a while;
// it says when some outlived that. A killed process loses its environment before it
// closes its files (the kernel frees its memory first), so a process no longer found by
// its environment is waited for by its start time until it is a zombie or gone: only
// then are its locks and descriptors released.
func EndByEnv(kv string) error {
	pause := time.Millisecond
	killed := map[int]uint64{}
	clean := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if killByEnv(kv, killed) == 0 && allDead(killed) {
			// Twice, apart: a process in the middle of an exec shows no environment for
			// a moment (its new memory is in place before its environment is).
			if clean++; clean == 2 {
				return nil
			}
		} else {
			clean = 0
		}
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
	return fmt.Errorf("processes with %s are still alive after SIGKILL", kv)
}

// allDead reports whether every process of killed (pid → start time) has ended: gone,
// a zombie, or its pid now another process's.
func allDead(killed map[int]uint64) bool {
	for pid, start := range killed {
		st, err := ReadStat(pid)
		if err != nil || st.StartTicks != start || st.State == 'Z' || st.State == 'X' {
			delete(killed, pid)
		}
	}
	return len(killed) == 0
}

// killByEnv sends SIGKILL to every process but this one whose environment holds kv and
// returns how many it found; killed, when not nil, gets each one's start time.
func killByEnv(kv string, killed map[int]uint64) int {
	n := 0
	self := os.Getpid()
	for _, pid := range pids() {
		if pid == self {
			continue
		}
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue
		}
		for _, e := range strings.Split(string(data), "\x00") {
			if e == kv {
				if st, err := ReadStat(pid); err == nil && killed != nil {
					killed[pid] = st.StartTicks
				}
				_ = syscall.Kill(pid, syscall.SIGKILL)
				n++
				break
			}
		}
	}
	return n
}
