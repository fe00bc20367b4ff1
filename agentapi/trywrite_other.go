//go:build !unix

package agentapi

import (
	"net"
	"time"
)

// tryWrite writes b, waiting at most a moment for a client that does not read.
func tryWrite(conn net.Conn, b []byte) error {
	if err := conn.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		return err
	}
	_, err := conn.Write(b)
	return err
}
