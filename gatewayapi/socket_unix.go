//go:build unix

package gatewayapi

import (
	"net"
	"os"
	"syscall"
)

// socketPair is a connected pair of Unix stream sockets, both close-on-exec: no process
// hgate starts but the gateway (given one end as an extra file) holds either end.
func socketPair() (mine, child *os.File, err error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	return os.NewFile(uintptr(fds[0]), "gateway"), os.NewFile(uintptr(fds[1]), "gateway"), nil
}

// sendConn hands conn's descriptor over u with one byte.
func sendConn(u *net.UnixConn, conn net.Conn) error {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return syscall.EINVAL
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	err = raw.Control(func(fd uintptr) {
		_, _, werr = u.WriteMsgUnix([]byte{0}, syscall.UnixRights(int(fd)), nil)
	})
	if err != nil {
		return err
	}
	return werr
}

// RecvConn takes the next connection handed over u (the gateway's side of sendConn).
func RecvConn(u *net.UnixConn) (net.Conn, error) {
	buf, oob := make([]byte, 1), make([]byte, syscall.CmsgSpace(4))
	for {
		_, oobn, _, _, err := u.ReadMsgUnix(buf, oob)
		if err != nil {
			return nil, err
		}
		fds := rights(oob[:oobn])
		if len(fds) == 0 {
			continue
		}
		for _, fd := range fds[1:] {
			syscall.Close(fd)
		}
		f := os.NewFile(uintptr(fds[0]), "connection")
		conn, err := net.FileConn(f)
		f.Close()
		if err == nil {
			return conn, nil
		}
	}
}

func rights(oob []byte) []int {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if r, err := syscall.ParseUnixRights(&m); err == nil {
			fds = append(fds, r...)
		}
	}
	return fds
}
