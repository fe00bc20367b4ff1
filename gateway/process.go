package gateway

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/hgate/hgate/gatewayapi"
)

// Main is hgate-gateway's: the gateway as a process of the loop's (gatewayapi.Client
// starts it). Its control socket is fd 3, the connections the loop accepts come on fd 4.
// It lives until the control socket ends, which is when the loop closes it or dies: it
// never outlives its owner. It ignores the terminal's signals, which are the loop's to
// act on: the loop ends it after the agent's session has ended.
func Main() int {
	signal.Ignore(os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	ctl, err := net.FileConn(os.NewFile(3, "control"))
	if err == nil {
		var conns net.Conn
		if conns, err = net.FileConn(os.NewFile(4, "connections")); err == nil {
			uc, ok := conns.(*net.UnixConn)
			if !ok {
				err = errors.New("fd 4 is not a Unix socket")
			} else {
				err = serveProcess(ctl, uc)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "hgate-gateway: %v (it is started by hgate loop, not by hand)\n", err)
		return 2
	}
	return 0
}

// process is the gateway's side of the control socket.
type process struct {
	ctl  net.Conn
	wmu  sync.Mutex
	g    *Gateway
	mu   sync.Mutex
	seq  uint64
	acks map[uint64]chan struct{}
	gone chan struct{} // the control socket ended
}

// serveProcess configures the gateway from the first line, serves the connections
// handed on conns, and answers the control socket until its end.
func serveProcess(ctl net.Conn, conns *net.UnixConn) error {
	p := &process{ctl: ctl, acks: map[uint64]chan struct{}{}, gone: make(chan struct{})}
	sc := bufio.NewScanner(ctl)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	if !sc.Scan() {
		return errors.New("no configuration on fd 3")
	}
	var first gatewayapi.Request
	if err := json.Unmarshal(sc.Bytes(), &first); err != nil || first.Op != "config" || first.Config == nil {
		return fmt.Errorf("the first line on fd 3 is not a configuration: %.80q", sc.Bytes())
	}
	g, err := New(p.config(*first.Config))
	if err != nil {
		p.reply(gatewayapi.Reply{ID: first.ID, Error: err.Error()})
		return err
	}
	p.g = g
	g.Serve(&handed{conns: conns})
	p.reply(gatewayapi.Reply{ID: first.ID, Protocol: gatewayapi.Protocol})
	for sc.Scan() {
		var req gatewayapi.Request
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			break
		}
		p.answer(req)
	}
	close(p.gone)
	return g.Close()
}

// config is the wire's configuration with the process's writers.
func (p *process) config(c gatewayapi.Config) Config {
	return Config{AnthropicURL: c.AnthropicURL, OpenAIURL: c.OpenAIURL, AnthropicKey: c.AnthropicKey, OpenAIKey: c.OpenAIKey,
		Prices: c.Prices, Limits: c.Limits, Spent: c.Spent, NoWebTools: c.NoWebTools, OnUsage: p.usage, Log: os.Stderr}
}

func (p *process) answer(req gatewayapi.Request) {
	rep := gatewayapi.Reply{ID: req.ID}
	switch req.Op {
	case "ack":
		p.mu.Lock()
		if ch := p.acks[req.Seq]; ch != nil {
			close(ch)
			delete(p.acks, req.Seq)
		}
		p.mu.Unlock()
		return
	case "scope":
		rep.Prefix = p.g.Scope(req.Name)
	case "end":
		p.g.End(req.Prefix)
	case "scopes":
		rep.Scopes = p.g.Book().Scopes()
	case "total":
		t := p.g.Book().Total()
		rep.Total = &t
	case "charge":
		if req.Spend != nil {
			p.g.Book().Charge(*req.Spend)
		}
	default:
		rep.Error = fmt.Sprintf("hgate-gateway: no operation %q", req.Op)
	}
	p.reply(rep)
}

// usage sends a usage event with its scope's count and holds the response until the loop
// has it (or is gone).
func (p *process) usage(u Usage) {
	count := p.g.Book().Scopes()[u.Scope]
	ch := make(chan struct{})
	p.mu.Lock()
	p.seq++
	seq := p.seq
	p.acks[seq] = ch
	p.mu.Unlock()
	p.reply(gatewayapi.Reply{Seq: seq, Usage: &u, Count: &count})
	select {
	case <-ch:
	case <-p.gone:
	}
}

func (p *process) reply(rep gatewayapi.Reply) {
	b, err := json.Marshal(rep)
	if err != nil {
		b, _ = json.Marshal(gatewayapi.Reply{ID: rep.ID, Error: err.Error()})
	}
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, _ = p.ctl.Write(append(b, '\n'))
}

// handed is a listener of the connections the loop hands over its socket.
type handed struct {
	conns *net.UnixConn
}

func (h *handed) Accept() (net.Conn, error) { return gatewayapi.RecvConn(h.conns) }
func (h *handed) Close() error              { return h.conns.Close() }
func (h *handed) Addr() net.Addr            { return h.conns.LocalAddr() }
