//go:build unix && !linux

package fsafe

import "golang.org/x/sys/unix"

// chmodOpen: without O_PATH, Chmod opens the name for reading (which needs read
// permission on it).
const chmodOpen = unix.O_RDONLY

func fchmodPath(fd int, mode uint32) error { return unix.Fchmod(fd, mode) }
