package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// lookups is a resolver that maps names to loopback and records every name asked.
type lookups struct {
	mu    sync.Mutex
	names map[string]string
	asked []string
}

func (l *lookups) resolve(_ context.Context, host string) ([]netip.Addr, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.asked = append(l.asked, host)
	if a, ok := l.names[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// syncBuffer is a log the proxy's goroutines write while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start serves a proxy for hosts on loopback; names map through res.
func start(t *testing.T, hosts []string, res *lookups, log io.Writer) string {
	t.Helper()
	p, err := New(Config{Hosts: hosts, Resolve: res.resolve, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Serve(l)
	t.Cleanup(func() { p.Close() })
	return l.Addr().String()
}

// connect sends CONNECT target to the proxy and returns its status and the connection.
func connect(t *testing.T, proxy, target string) (int, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "CONNECT "+target+" HTTP/1.1\r\nHost: "+target+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, c
}

// TestHTTPSThroughListedHost: a client that honours HTTPS_PROXY reaches a listed HTTPS
// host by name through the proxy, the name resolved by the proxy's resolver alone.
func TestHTTPSThroughListedHost(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secret-free answer")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	res := &lookups{names: map[string]string{"api.example": "127.0.0.1"}}
	proxy := start(t, []string{"api.example:" + port}, res, nil)
	pu, _ := url.Parse("http://" + proxy)
	tr := srv.Client().Transport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(pu)
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} // the test server's name is not api.example
	resp, err := (&http.Client{Transport: tr}).Get("https://api.example:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "secret-free answer" {
		t.Errorf("through the proxy: %q", body)
	}
	if strings.Join(res.asked, ",") != "api.example" {
		t.Errorf("names looked up: %q", res.asked)
	}
}

// TestRefusals: an unlisted host, a listed host at another port, a plain HTTP request and
// an IP literal that is not listed are refused with 403 and logged; no name outside the
// list is ever looked up. A listed IP literal goes through without a lookup.
func TestRefusals(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	_, port, _ := net.SplitHostPort(echo.Addr().String())
	res := &lookups{names: map[string]string{"api.example": "127.0.0.1", "evil.example": "127.0.0.1"}}
	var log syncBuffer
	proxy := start(t, []string{"API.example.", "127.0.0.1:" + port}, res, &log)
	for _, target := range []string{"evil.example:443", "api.example:" + port, "127.0.0.2:" + port, "localhost:" + port} {
		if code, _ := connect(t, proxy, target); code != http.StatusForbidden {
			t.Errorf("CONNECT %s: %d, want 403", target, code)
		}
	}
	// A plain request through the proxy (HTTP_PROXY's way) is refused too.
	resp, err := (&http.Client{Transport: &http.Transport{Proxy: func(*http.Request) (*url.URL, error) {
		return url.Parse("http://" + proxy)
	}}}).Get("http://api.example/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("GET through the proxy: %d, want 403", resp.StatusCode)
	}
	// The listed IP literal: a tunnel, and what goes in comes back.
	code, c := connect(t, proxy, "127.0.0.1:"+port)
	if code != http.StatusOK {
		t.Fatalf("CONNECT to the listed literal: %d", code)
	}
	io.WriteString(c, "ping\n")
	if line, _ := bufio.NewReader(c).ReadString('\n'); line != "ping\n" {
		t.Errorf("through the tunnel: %q", line)
	}
	// Something that is not a request is answered 400 and logged.
	g, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(g, "hello\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(g), nil); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a line that is no request: %v %v, want 400", resp, err)
	}
	g.Close()
	if len(res.asked) != 0 {
		t.Errorf("names looked up: %q, want none", res.asked)
	}
	got := log.String()
	for _, want := range []string{"refused CONNECT evil.example:443", "refused CONNECT api.example:" + port, "refused CONNECT 127.0.0.2:" + port, "refused CONNECT localhost:" + port, "refused GET http://api.example/", "refused a request it could not read"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
}

func TestParseHost(t *testing.T) {
	for in, want := range map[string]string{
		"a.example": "a.example:443", "B.Example.:8443": "b.example:8443", "10.0.0.1": "10.0.0.1:443",
		"[::1]:80": "[::1]:80", "::1": "[::1]:443",
		"": "", "https://a.example": "", "a.example:0": "", "a.example:x": "", "*.example": "", "a/b": "",
	} {
		got, err := ParseHost(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("ParseHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// TestServeSeveral: one proxy serves a listener per sandbox; closing one (its phase
// ended) leaves the others answering, and Close ends them all.
func TestServeSeveral(t *testing.T) {
	p, err := New(Config{Hosts: []string{"a.example"}})
	if err != nil {
		t.Fatal(err)
	}
	var ls []net.Listener
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p.Serve(l)
		ls = append(ls, l)
	}
	ls[0].Close()
	if code, _ := connect(t, ls[1].Addr().String(), "b.example:443"); code != http.StatusForbidden {
		t.Errorf("the second listener: %d, want 403", code)
	}
	p.Close()
	if c, err := net.Dial("tcp", ls[1].Addr().String()); err == nil {
		c.Close()
		t.Error("a listener still accepts after Close")
	}
}
