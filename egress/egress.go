// Package egress is hgate's allow-listing HTTPS proxy: what the agent reaches of the
// network besides its model under loop.sandbox.network: {hosts: [...]}. The agent's
// sandbox has a network namespace with loopback only; the proxy is served there on a
// listener the sandbox's shim brings back, and the agent's CLIs find it through
// HTTPS_PROXY. It tunnels CONNECT to the listed hosts and ports and to nothing else: any
// other request is refused with 403 and logged, and a name the list does not hold is
// never looked up (a lookup is itself a message out).
package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is what a proxy lets through.
type Config struct {
	// Hosts are the allowed destinations: "name" or "name:port" (443 when no port), a
	// name or an IP literal ("[::1]:8443" for IPv6 with a port).
	Hosts []string
	// Resolve looks a listed name up (the system's resolver when nil). It is asked only
	// for names the list holds.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
	// Log gets one line per refused request (nil: none).
	Log io.Writer
	// DialTimeout bounds the connection to a listed host (30 s when zero).
	DialTimeout time.Duration
}

// Proxy is a running proxy: Serve it on listeners, Close it once. It speaks just enough
// HTTP/1.1 to read a request's line and headers and answer (not net/http, which hgate
// does not link: it costs every start).
type Proxy struct {
	cfg     Config
	allowed map[string]bool // "host:port", canonical
	logMu   sync.Mutex

	mu        sync.Mutex
	listeners []net.Listener
	conns     map[net.Conn]bool // the clients' and the hosts' connections, open
	closed    bool
}

// DefaultPort is the port of a listed host named without one.
const DefaultPort = 443

// ParseHost reads one entry of Config.Hosts into its canonical "host:port": the name in
// lower case without a final dot, the port DefaultPort when none is given.
func ParseHost(s string) (string, error) {
	host, port := s, strconv.Itoa(DefaultPort)
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.Contains(strings.Trim(s, "[]"), ":") && !strings.HasPrefix(s, "[") {
		host = s // an IPv6 literal without brackets and without a port
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || strings.ContainsAny(host, "/@*?# ") {
		return "", fmt.Errorf("%q is not a host name or an IP address (expected a.example or a.example:443)", s)
	}
	if _, err := netip.ParseAddr(host); err != nil && strings.Contains(host, ":") {
		return "", fmt.Errorf("%q is not a host name or an IP address (expected a.example or a.example:443)", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("%q: the port is not one of 1..65535", s)
	}
	return net.JoinHostPort(host, strconv.Itoa(n)), nil
}

// New makes a proxy for cfg; an entry of Hosts that is not a host is an error.
func New(cfg Config) (*Proxy, error) {
	p := &Proxy{cfg: cfg, allowed: map[string]bool{}, conns: map[net.Conn]bool{}}
	for _, h := range cfg.Hosts {
		key, err := ParseHost(h)
		if err != nil {
			return nil, fmt.Errorf("egress: %w", err)
		}
		p.allowed[key] = true
	}
	if p.cfg.Resolve == nil {
		p.cfg.Resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if p.cfg.DialTimeout == 0 {
		p.cfg.DialTimeout = 30 * time.Second
	}
	return p, nil
}

// Serve answers on l until l or the proxy is closed; it returns at once. It may be called
// for several listeners (one per sandbox).
func (p *Proxy) Serve(l net.Listener) {
	p.mu.Lock()
	closed := p.closed
	if !closed {
		p.listeners = append(p.listeners, l)
	}
	p.mu.Unlock()
	if closed {
		l.Close()
		return
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				p.forget(l) // closed: its sandbox's phase ended, or the proxy did
				return
			}
			go p.handle(c)
		}
	}()
}

// forget drops a listener that no longer accepts.
func (p *Proxy) forget(l net.Listener) {
	l.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listeners = slices.DeleteFunc(p.listeners, func(m net.Listener) bool { return m == l })
}

// Close stops every listener and ends every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for _, l := range p.listeners {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range p.conns {
		c.Close()
	}
	return errors.Join(errs...)
}

// headerTimeout bounds the wait for a request's line and headers.
const headerTimeout = 30 * time.Second

// handle reads one request from a client and tunnels it to a listed host, or refuses it.
func (p *Proxy) handle(down net.Conn) {
	if !p.track(down) {
		down.Close()
		return
	}
	defer p.untrack(down)
	down.SetReadDeadline(time.Now().Add(headerTimeout))
	br := bufio.NewReaderSize(down, maxLine)
	method, target, err := readRequest(br)
	if err != nil {
		p.logf("egress: refused a request it could not read: %v", err)
		answer(down, "400 Bad Request", "hgate egress: "+err.Error())
		return
	}
	down.SetReadDeadline(time.Time{})
	if method != "CONNECT" {
		p.refuse(down, method+" "+target, "only CONNECT to a listed host goes through")
		return
	}
	key, err := ParseHost(target)
	if err != nil || !p.allowed[key] {
		p.refuse(down, "CONNECT "+target, "not in loop.sandbox.network.hosts")
		return
	}
	up, err := p.dial(key)
	if err != nil {
		p.logf("egress: CONNECT %s failed: %v", key, err)
		answer(down, "502 Bad Gateway", "hgate egress: "+key+": "+err.Error())
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	tunnel(down, br, up)
}

// maxLine and maxHeaders bound what a request may send before its tunnel.
const (
	maxLine    = 8 << 10
	maxHeaders = 100
)

// readRequest reads a request's line and its headers (which the proxy ignores) and
// returns its method and target.
func readRequest(br *bufio.Reader) (method, target string, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return "", "", fmt.Errorf("the request line: %w", err)
	}
	fields := strings.Fields(string(line))
	if len(fields) != 3 || !strings.HasPrefix(fields[2], "HTTP/1.") {
		return "", "", errors.New("not an HTTP/1 request line")
	}
	for i := 0; ; i++ {
		h, err := br.ReadSlice('\n')
		if err != nil {
			return "", "", fmt.Errorf("the headers: %w", err)
		}
		if len(strings.TrimRight(string(h), "\r\n")) == 0 {
			return fields[0], fields[1], nil
		}
		if i == maxHeaders {
			return "", "", errors.New("too many headers")
		}
	}
}

// answer writes a whole response with a text body; the connection is closed after.
func answer(c net.Conn, status, body string) {
	c.SetWriteDeadline(time.Now().Add(headerTimeout))
	fmt.Fprintf(c, "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n", status, len(body)+1, body)
}

// refuse answers 403 and logs what was refused and why.
func (p *Proxy) refuse(c net.Conn, what, why string) {
	p.logf("egress: refused %s: %s", what, why)
	answer(c, "403 Forbidden", "hgate egress: refused "+what+": "+why)
}

func (p *Proxy) logf(format string, args ...any) {
	if p.cfg.Log == nil {
		return
	}
	line := strings.Map(func(r rune) rune { // one line, whatever the request held
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, fmt.Sprintf(format, args...))
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintln(p.cfg.Log, line)
}

// dial connects to a listed host:port: an IP literal as it is, a name through Resolve.
func (p *Proxy) dial(key string) (net.Conn, error) {
	host, port, _ := net.SplitHostPort(key)
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.DialTimeout)
	defer cancel()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = p.cfg.Resolve(ctx, host); err != nil {
		return nil, err
	}
	var d net.Dialer
	err := fmt.Errorf("%s has no address", host)
	for _, a := range addrs {
		var c net.Conn
		if c, err = d.DialContext(ctx, "tcp", net.JoinHostPort(a.Unmap().String(), port)); err == nil {
			return c, nil
		}
	}
	return nil, err
}

// tunnel copies both ways until both ends are done; what the client sent after its
// request, already buffered in br, goes first.
func tunnel(down net.Conn, br *bufio.Reader, up net.Conn) {
	done := make(chan struct{})
	go func() {
		io.Copy(up, br)
		closeWrite(up)
		// A client that is gone (its sandbox ended) does not keep the tunnel open for
		// a host that never ends its side.
		up.SetReadDeadline(time.Now().Add(30 * time.Second))
		close(done)
	}()
	io.Copy(down, up)
	closeWrite(down)
	<-done
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

// closeWrite ends one direction of a tunnel, so the other side sees its end.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}
