//go:build unix

package agentapi

import (
	"errors"
	"net"
	"syscall"
)

// tryWrite writes b with one non-blocking attempt: all of it goes into the socket's
// buffer, or the client is not reading.
func tryWrite(conn net.Conn, b []byte) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return errors.New("not a socket")
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var n int
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true // never wait for room
	})
	switch {
	case err != nil:
		return err
	case werr != nil:
		return werr
	case n < len(b):
		return errors.New("short write")
	}
	return nil
}
