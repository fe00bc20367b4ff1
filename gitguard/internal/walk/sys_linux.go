//go:build linux

package walk

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The walk's per-file system calls (a tracked file's open, fstat, read and close, and
// an entry's lstat) are made raw: they do not tell Go's scheduler they may block, so a
// worker keeps its P through them. Told, every call that took more than 20 µs (most of
// them on a small VM) let the runtime's monitor hand the worker's P to another thread:
// hundreds of thread switches a walk, and about a tenth of its time (docs/performance.md,
// Where the guard spends its time). They act on the worktree's files, whose data and
// metadata are in the page cache after the first walk; a call that waits on a disk
// holds its P for that wait, and on a file system that hangs, the process's other
// goroutines wait with the walk (which never ends there either way).

// readFd reads from fd into p.
func readFd(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// fstatFd is fstat(2) of fd.
func fstatFd(fd int, st *unix.Stat_t) error {
	if _, _, e := unix.RawSyscall(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(st)), 0); e != 0 {
		return e
	}
	return nil
}

// closeFd closes fd.
func closeFd(fd int) { unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0) }
