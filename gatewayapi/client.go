package gatewayapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/spend"
)

// Client is a running gateway process, owned by the loop that started it: it ends when
// Close is called or when its owner dies (the gateway exits at the end of its control
// socket, which only its owner holds).
type Client struct {
	cmd     *exec.Cmd
	release func()   // of the loop's reaping of orphans (proc.Own)
	ctl     net.Conn // JSON lines
	conns   *net.UnixConn
	onUsage func(Usage, Scope)

	wmu     sync.Mutex // one line at a time on ctl
	mu      sync.Mutex
	next    uint64
	pending map[uint64]chan Reply
	dead    error // why the gateway stopped answering; nil while it runs
	done    chan struct{}
}

// errClosed answers a request made after the gateway stopped.
var errClosed = errors.New("the model gateway is not running")

// Start starts the gateway next to this executable with cfg. onUsage is called with
// every usage event and its scope's count, in order, on one goroutine, before the
// gateway passes on what it counted; it must not call the Client. stderr gets the
// gateway's log (the requests it refused).
func Start(cfg Config, onUsage func(Usage, Scope), stderr io.Writer) (*Client, error) {
	bin, err := binaryPath()
	if err != nil {
		return nil, err
	}
	return StartBinary(bin, cfg, onUsage, stderr)
}

// binaryPath is hgate-gateway next to this executable, symlinks resolved.
func binaryPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the model gateway: this executable's folder: %w", err)
	}
	if real, err := filepath.EvalSymlinks(self); err == nil {
		self = real
	}
	bin := filepath.Join(filepath.Dir(self), Binary)
	if fi, err := os.Stat(bin); err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("the model gateway: %s is not an executable next to %s (install both: CGO_ENABLED=0 go install ./cmd/...)", Binary, self)
	}
	return bin, nil
}

// StartBinary is Start with the gateway's executable named.
func StartBinary(bin string, cfg Config, onUsage func(Usage, Scope), stderr io.Writer) (*Client, error) {
	ctl, ctlChild, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("the model gateway: %w", err)
	}
	conns, connsChild, err := socketPair()
	if err != nil {
		ctl.Close()
		ctlChild.Close()
		return nil, fmt.Errorf("the model gateway: %w", err)
	}
	cmd := exec.Command(bin)
	cmd.Env = []string{} // nothing of hgate's environment: its settings come on the socket
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{ctlChild, connsChild} // fds 3 and 4
	err = cmd.Start()
	ctlChild.Close()
	connsChild.Close()
	if err != nil {
		ctl.Close()
		conns.Close()
		return nil, fmt.Errorf("the model gateway: %w", err)
	}
	// The loop's own child, not an orphan a session left: its reaping spares it.
	c := &Client{cmd: cmd, release: proc.Own(cmd.Process.Pid), onUsage: onUsage, pending: map[uint64]chan Reply{}, done: make(chan struct{})}
	if c.ctl, err = fileConn(ctl); err == nil {
		var uc net.Conn
		if uc, err = fileConn(conns); err == nil {
			c.conns = uc.(*net.UnixConn)
		}
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		c.release()
		return nil, fmt.Errorf("the model gateway: %w", err)
	}
	go c.read()
	return c, c.configure(cfg)
}

// fileConn is f as a connection; f itself is closed.
func fileConn(f *os.File) (net.Conn, error) {
	defer f.Close()
	return net.FileConn(f)
}

// configure sends the first line and checks the gateway's protocol.
func (c *Client) configure(cfg Config) error {
	rep, err := c.call(Request{Op: "config", Config: &cfg})
	if err == nil && rep.Protocol != Protocol {
		err = fmt.Errorf("%s speaks protocol %d, this hgate %d: it is from another build (reinstall both with go install ./cmd/...)", c.cmd.Path, rep.Protocol, Protocol)
	}
	if err != nil {
		c.Close()
		return fmt.Errorf("the model gateway: %w", err)
	}
	return nil
}

// read takes the gateway's lines until its end: answers to their callers, usage events
// to onUsage and then their ack.
func (c *Client) read() {
	sc := bufio.NewScanner(c.ctl)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var rep Reply
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			c.stop(fmt.Errorf("the model gateway sent %.80q: %w", sc.Bytes(), err))
			return
		}
		if rep.ID == 0 && rep.Usage != nil {
			c.usage(rep)
			continue
		}
		c.mu.Lock()
		ch := c.pending[rep.ID]
		delete(c.pending, rep.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- rep
		}
	}
	c.stop(errClosed)
}

func (c *Client) usage(rep Reply) {
	var count Scope
	if rep.Count != nil {
		count = *rep.Count
	}
	if c.onUsage != nil {
		c.onUsage(*rep.Usage, count)
	}
	_ = c.send(Request{Op: "ack", Seq: rep.Seq})
}

// stop marks the gateway gone and answers every caller still waiting.
func (c *Client) stop(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead != nil {
		return
	}
	c.dead = why
	for id, ch := range c.pending {
		ch <- Reply{ID: id, Error: why.Error()}
		delete(c.pending, id)
	}
	close(c.done)
}

func (c *Client) send(req Request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.ctl.Write(append(b, '\n'))
	return err
}

// call sends req and waits for its answer.
func (c *Client) call(req Request) (Reply, error) {
	ch := make(chan Reply, 1)
	c.mu.Lock()
	if c.dead != nil {
		c.mu.Unlock()
		return Reply{}, c.dead
	}
	c.next++
	req.ID = c.next
	c.pending[req.ID] = ch
	c.mu.Unlock()
	if err := c.send(req); err != nil {
		c.stop(err)
	}
	rep := <-ch
	if rep.Error != "" {
		return rep, errors.New(rep.Error)
	}
	return rep, nil
}

// Scope registers a scope and returns the path prefix its CLI's base URL takes
// ("/s/<token>", the token random): every request under it counts to that scope.
func (c *Client) Scope(name string) (string, error) {
	rep, err := c.call(Request{Op: "scope", Name: name})
	return rep.Prefix, err
}

// End ends the scope of prefix (what Scope returned): its session is over, and a request
// under it is refused from now on. What it counted stays.
func (c *Client) End(prefix string) error {
	_, err := c.call(Request{Op: "end", Prefix: prefix})
	return err
}

// Scopes is what each scope spent, by name.
func (c *Client) Scopes() (map[string]Scope, error) {
	rep, err := c.call(Request{Op: "scopes"})
	if rep.Scopes == nil {
		rep.Scopes = map[string]Scope{}
	}
	return rep.Scopes, err
}

// Total is everything spent: before the gateway started, charged to it, and counted.
func (c *Client) Total() (Scope, error) {
	rep, err := c.call(Request{Op: "total"})
	if rep.Total == nil {
		return Scope{}, err
	}
	return *rep.Total, err
}

// Charge adds spend the gateway did not see to what its budget check counts.
func (c *Client) Charge(s spend.Spend) error {
	_, err := c.call(Request{Op: "charge", Spend: &s})
	return err
}

// Serve hands every connection accepted on l to the gateway until l is closed; it
// returns at once. The connections the gateway holds end with it.
func (c *Client) Serve(l net.Listener) {
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = sendConn(c.conns, conn) // a connection not handed is closed: the CLI retries
			conn.Close()
		}
	}()
}

// Close ends the gateway: the end of its control socket stops it and every response in
// flight; one that does not exit within 10 s is killed.
func (c *Client) Close() error {
	c.ctl.Close()
	c.conns.Close()
	c.stop(errClosed)
	exited := make(chan error, 1)
	go func() {
		err := c.cmd.Wait()
		c.release()
		exited <- err
	}()
	select {
	case err := <-exited:
		return err
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		return <-exited
	}
}

// Pid is the gateway process's id.
func (c *Client) Pid() int { return c.cmd.Process.Pid }
