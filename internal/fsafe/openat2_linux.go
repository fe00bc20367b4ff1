package fsafe

import (
	"errors"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

var errNoOpenat2 = errors.New("openat2 is not available")

// noOpenat2 is set once the kernel (or a seccomp filter) answered ENOSYS; tests set it
// to exercise the fallback.
var noOpenat2 atomic.Bool

const resolve = unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV

func openat2(dirfd int, name string, flags int, mode uint32) (int, error) {
	if noOpenat2.Load() {
		return -1, errNoOpenat2
	}
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: resolve})
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR, unix.EAGAIN: // EAGAIN: a rename raced the lookup; try again
			continue
		case unix.ENOSYS:
			noOpenat2.Store(true)
			return -1, errNoOpenat2
		case unix.EPERM:
			// Some seccomp filters answer EPERM to a syscall they do not know: the
			// walk tries again, and gives the same EPERM where it was the file's.
			return -1, errNoOpenat2
		}
		return -1, err
	}
}
