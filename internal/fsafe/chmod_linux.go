package fsafe

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// chmodOpen opens a name for Chmod without needing any permission on it.
const chmodOpen = unix.O_PATH

// fchmodPath sets the mode of what the O_PATH descriptor fd names, through its
// /proc/self/fd link (fchmod refuses an O_PATH descriptor); where /proc is not
// mounted, through a descriptor opened for reading, which needs read permission.
func fchmodPath(fd int, mode uint32) error {
	err := unix.Chmod("/proc/self/fd/"+strconv.Itoa(fd), mode)
	if err != unix.ENOENT {
		return err
	}
	rfd, err := unix.Openat(fd, "", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	return unix.Fchmod(rfd, mode)
}
