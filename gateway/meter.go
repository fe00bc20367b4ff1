package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/hgate/hgate/spend"
)

// call is one forwarded request, carried in its context to the response's meter.
type call struct {
	scope  string
	model  string
	stream bool
}

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// meter counts the provider's answer and wraps its body so that every usage it carries
// is counted as it passes, before the CLI has it.
func (g *Gateway) meter(resp *http.Response) error {
	c := callOf(resp.Request.Context())
	if c == nil {
		return nil
	}
	g.book.answered(c.scope, resp.StatusCode)
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	g.book.opened(c.scope, 1)
	resp.Body = &meteredBody{rc: resp.Body, g: g, c: c, sse: sse}
	return nil
}

// maxJSONBody bounds what the meter keeps of a response that is not a stream (its usage
// is read at its end); a longer one is passed through uncounted but for its scope's
// request, and marked as such by an event with no tokens.
const maxJSONBody = 16 << 20

// meteredBody reads through the provider's body: a stream's events line by line, a
// JSON body whole at its end.
type meteredBody struct {
	rc   io.ReadCloser
	g    *Gateway
	c    *call
	sse  bool
	line []byte       // a stream's line not yet ended
	body []byte       // a JSON body so far
	seen spend.Tokens // the response's cumulative usage so far
	once sync.Once
	done bool // the response's end was read
	last bool // finish is counting: an event is sent even with nothing grown
}

func (m *meteredBody) Read(p []byte) (int, error) {
	n, err := m.rc.Read(p)
	if n > 0 {
		m.take(p[:n])
	}
	if err == io.EOF {
		m.done = true
		m.finish()
	}
	return n, err
}

func (m *meteredBody) Close() error {
	m.finish()
	return m.rc.Close()
}

func (m *meteredBody) take(b []byte) {
	if !m.sse {
		if len(m.body)+len(b) <= maxJSONBody {
			m.body = append(m.body, b...)
		}
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(m.line)+len(b) <= maxJSONBody {
				m.line = append(m.line, b...)
			}
			return
		}
		m.line = append(m.line, b[:i]...)
		m.event(m.line)
		m.line = m.line[:0]
		b = b[i+1:]
	}
}

// event reads one line of a stream: a "data:" line may carry a usage.
func (m *meteredBody) event(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok {
		return
	}
	if model, t, ok := usageOf(data); ok {
		m.count(model, t, false)
	}
}

// count adds what the response's cumulative usage grew by since the last event.
func (m *meteredBody) count(model string, cum spend.Tokens, final bool) {
	if model == "" {
		model = m.c.model
	}
	next := most(m.seen, cum)
	grown := next.Sub(m.seen) // a stream's usage is cumulative: count what it grew by
	m.seen = next
	if grown == (spend.Tokens{}) && !m.last {
		return
	}
	price, ok := m.g.cfg.Prices.Lookup(model)
	if !ok {
		price = m.g.cfg.Prices.Dearest()
	}
	m.g.book.add(Usage{Scope: m.c.scope, Model: model, Tokens: grown, USD: price.Cost(grown), Unpriced: !ok, Final: final})
}

// finish counts a JSON body's usage at its end and closes the response's count: final
// when its end was read, else it is left marked as cut (the CLI went away, or hgate is
// stopping) with everything counted up to its last usage.
func (m *meteredBody) finish() {
	m.once.Do(func() {
		m.g.book.opened(m.c.scope, -1)
		m.last = true
		if !m.sse {
			model, t, _ := usageOf(m.body)
			m.count(model, t, m.done)
			return
		}
		m.count("", spend.Tokens{}, m.done)
	})
}
