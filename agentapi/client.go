package agentapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
)

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// Call sends "hgate ARGS..." to the socket at path and copies the command's
// stdout and stderr to stdout and stderr as they come. It returns the command's
// exit code; an error means no exit code came (the socket could not be reached,
// the connection broke, or ctx ended, which closes the connection and so
// cancels the command).
func Call(ctx context.Context, path string, args []string, stdout, stderr io.Writer) (int, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return exitCannot, fmt.Errorf("cannot reach the loop's socket (%s=%s): %v", EnvSocket, path, unwrapOp(err))
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if args == nil {
		args = []string{}
	}
	line, _ := json.Marshal(request{Args: args})
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return exitCannot, callErr(ctx, err)
	}
	br := bufio.NewReader(conn)
	var hdr [5]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return exitCannot, callErr(ctx, err)
		}
		n := binary.BigEndian.Uint32(hdr[1:])
		if n > maxFrame {
			return exitCannot, fmt.Errorf("the loop's socket: frame of %d bytes (at most %d)", n, maxFrame)
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(br, p); err != nil {
			return exitCannot, callErr(ctx, err)
		}
		switch hdr[0] {
		case kindStdout:
			_, _ = stdout.Write(p)
		case kindStderr:
			_, _ = stderr.Write(p)
		case kindExit:
			code, err := strconv.Atoi(string(p))
			if err != nil {
				return exitCannot, fmt.Errorf("the loop's socket: exit frame %q is not a number", p)
			}
			return code, nil
		default:
			return exitCannot, fmt.Errorf("the loop's socket: unknown frame kind %q", hdr[0])
		}
	}
}

func callErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("the loop's socket closed before the command's exit code came (did the loop stop?)")
	}
	return fmt.Errorf("the loop's socket: %v", unwrapOp(err))
}

// unwrapOp drops the "dial unix PATH: connect:" prefixes, which repeat what the
// message says already.
func unwrapOp(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	var sys *os.SyscallError
	if errors.As(err, &sys) && sys.Err != nil {
		err = sys.Err
	}
	return err
}
