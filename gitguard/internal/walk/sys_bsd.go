//go:build darwin || freebsd

package walk

import "golang.org/x/sys/unix"

// readFd reads from fd into p (raw on Linux: sys_linux.go).
func readFd(fd int, p []byte) (int, error) { return unix.Read(fd, p) }

// fstatFd is fstat(2) of fd.
func fstatFd(fd int, st *unix.Stat_t) error { return unix.Fstat(fd, st) }

// closeFd closes fd.
func closeFd(fd int) { unix.Close(fd) }
