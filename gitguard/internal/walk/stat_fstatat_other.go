//go:build linux && !amd64 && !arm64

package walk

import "golang.org/x/sys/unix"

// fstatat is lstat of name inside the directory fd; the direct system call
// of stat_fstatat.go is kept to the architectures where it was checked.
func fstatat(fd int, name string, st *unix.Stat_t) error {
	return unix.Fstatat(fd, name, st, unix.AT_SYMLINK_NOFOLLOW)
}

func openat(fd int, name string) (int, error) {
	for {
		r, err := unix.Openat(fd, name, openFlags, 0)
		if err != unix.EINTR {
			return r, err
		}
	}
}
