//go:build !unix

package gatewayapi

import (
	"errors"
	"net"
	"os"
)

var errNoSockets = errors.New("the model gateway needs Unix sockets, which this system does not give")

func socketPair() (mine, child *os.File, err error) { return nil, nil, errNoSockets }

func sendConn(*net.UnixConn, net.Conn) error { return errNoSockets }

// RecvConn takes the next connection handed over u: never, here.
func RecvConn(*net.UnixConn) (net.Conn, error) { return nil, errNoSockets }
