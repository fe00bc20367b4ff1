package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// socketPair makes the shim's channel (see Death): SEQPACKET, so that each record arrives
// whole or not at all, with its descriptors.
func socketPair() (r, w *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	return os.NewFile(uintptr(fds[0]), "hgate-sandbox-channel"), os.NewFile(uintptr(fds[1]), "hgate-sandbox-channel"), nil
}

// record reads one record of the shim's and the descriptors it carried.
func (d *Death) record() (string, []int, error) {
	buf := make([]byte, 64)
	oob := make([]byte, unix.CmsgSpace(4*max(d.listen, 1)))
	n, oobn, _, _, err := d.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return "", nil, err
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if rights, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, rights...)
			}
		}
	}
	if n == 0 && len(fds) == 0 {
		return "", nil, io.EOF // the shim is gone
	}
	return string(buf[:n]), fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// listenRecord is the record the listeners travel with.
func listenRecord(n int) string { return "listen " + strconv.Itoa(n) + "\n" }

// Listeners receives the listeners of Policy.Listen from the shim, in the policy's order
// (none when it has no Listen). Call it once, after Started and before Signal. It fails
// when the shim ended without sending them (it could not listen: its stderr says why) or
// sent nothing within timeout; the caller then ends the command, which never ran.
func (d *Death) Listeners(timeout time.Duration) ([]net.Listener, error) {
	if d == nil || d.listen == 0 {
		return nil, nil
	}
	if d.got {
		return nil, errors.New("sandbox: the listeners were taken already")
	}
	d.got = true
	d.Started()
	d.conn.SetReadDeadline(time.Now().Add(timeout))
	defer d.conn.SetReadDeadline(time.Time{})
	text, fds, err := d.record()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("sandbox: the shim ended before it listened (its stderr says why)")
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: no listeners from the shim: %w", err)
	}
	if text != listenRecord(d.listen) || len(fds) != d.listen {
		closeAll(fds)
		return nil, fmt.Errorf("sandbox: the shim sent %q and %d descriptors, want %d listeners", text, len(fds), d.listen)
	}
	ls := make([]net.Listener, 0, len(fds))
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "hgate-sandbox-listener")
		l, err := net.FileListener(f) // a copy of the descriptor
		f.Close()
		if err != nil {
			closeAll(fds[i+1:])
			for _, l := range ls {
				l.Close()
			}
			return nil, fmt.Errorf("sandbox: listener %d from the shim: %w", i, err)
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// sendListeners is the shim's side: it listens on 127.0.0.1 at each port, in the new
// network namespace, and sends the descriptors on the channel (fd ch). Its own copies are
// closed: the command never holds them.
func sendListeners(ch int, ports []int) error {
	fds := make([]int, 0, len(ports))
	defer func() { closeAll(fds) }()
	for _, port := range ports {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		fds = append(fds, fd)
		if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			return fmt.Errorf("listen on 127.0.0.1:%d in the network namespace: %w", port, err)
		}
		if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
			return fmt.Errorf("listen on 127.0.0.1:%d in the network namespace: %w", port, err)
		}
	}
	if err := unix.Sendmsg(ch, []byte(listenRecord(len(fds))), unix.UnixRights(fds...), nil, 0); err != nil {
		return fmt.Errorf("listen: send the listeners: %w", err)
	}
	return nil
}

// awaitGo is a warm shim's wait (see WrapWarm), its sandbox set up and its command not
// started: true when the go record comes on its channel (fd ch), false when the channel
// ends first (hgate closed it, or died: then this shim is being killed anyway) or carries
// anything else. The fd may have been inherited non-blocking: the wait is a blocking read
// on this thread, which nothing else needs.
func awaitGo(ch int) bool {
	if err := unix.SetNonblock(ch, false); err != nil {
		return false
	}
	buf := make([]byte, 16)
	for {
		n, err := unix.Read(ch, buf)
		if err == unix.EINTR {
			continue
		}
		return err == nil && string(buf[:n]) == goRecord
	}
}
