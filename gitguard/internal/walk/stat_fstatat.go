//go:build linux && (amd64 || arm64)

package walk

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fstatat is lstat of name inside the directory fd. It calls newfstatat
// itself with the name copied into a buffer on the stack: unix.Fstatat
// allocates a C string per call, one allocation per tracked file; and raw,
// as the walk's other per-file calls (sys_linux.go).
func fstatat(fd int, name string, st *unix.Stat_t) error {
	var buf [256]byte // NAME_MAX and the terminating NUL
	if len(name) >= len(buf) || strings.IndexByte(name, 0) >= 0 {
		// Too long for any directory entry, or not a C string: let
		// unix.Fstatat report the error.
		return unix.Fstatat(fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
	}
	copy(buf[:], name)
	buf[len(name)] = 0
	_, _, e := unix.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(st)), unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// openat opens name inside the directory fd for reading, without following
// a symlink or blocking on a fifo, copying the name on the stack as fstatat.
func openat(fd int, name string) (int, error) {
	var buf [256]byte
	if len(name) >= len(buf) || strings.IndexByte(name, 0) >= 0 {
		return unix.Openat(fd, name, openFlags, 0)
	}
	copy(buf[:], name)
	buf[len(name)] = 0
	for {
		r, _, e := unix.RawSyscall6(unix.SYS_OPENAT, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), openFlags, 0, 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return -1, e
		}
		return int(r), nil
	}
}
