package mcpserver

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"
)

const proxyUsage = `Usage: hgate-mcp proxy --server NAME --log FILE [--cwd DIR] [--iteration N] [--tool-timeout D] -- COMMAND [ARG...]

Runs COMMAND (an MCP server the agent built) in DIR and passes the MCP messages
between it and the agent's CLI on stdio unchanged (newline-delimited JSON), appending
one JSON line to FILE per tools/call: server, tool, status (completed, error,
timeout), duration, the argument keys and sizes — never their values. A call the
server does not answer within the tool timeout is answered with an error. hgate loop
starts each of the agent's qualified servers through it (README, "Activation").
`

// callLine is one line of mcp_calls.jsonl.
type callLine struct {
	CreatedAt     string         `json:"created_at"`
	Source        string         `json:"source"` // agent: written inside the agent's sandbox
	Iteration     int            `json:"iteration"`
	Server        string         `json:"server"`
	Tool          string         `json:"tool"`
	Status        string         `json:"status"` // completed, error, timeout
	DurationMS    int64          `json:"duration_ms"`
	ArgumentKeys  []string       `json:"argument_keys"`
	ArgumentSizes map[string]int `json:"argument_sizes"` // bytes of each argument's JSON
	ArgumentBytes int            `json:"argument_json_bytes"`
	ResultBytes   int            `json:"result_json_bytes"`
}

// pendingCall is a tools/call waiting for its answer.
type pendingCall struct {
	line  callLine
	start time.Time
	timer *time.Timer
}

// proxy passes messages between the client (in, out) and the server, logging tools/calls.
type proxy struct {
	mu      sync.Mutex
	out     io.Writer // to the client
	log     *os.File
	server  string
	iter    int
	timeout time.Duration
	pending map[string]*pendingCall
	// timedOut are the calls the proxy answered itself: the server's late answer is dropped.
	timedOut []string
}

// Proxy is hgate-mcp proxy's main.
func Proxy(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hgate-mcp proxy", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	server := fs.String("server", "", "")
	logPath := fs.String("log", "", "")
	cwd := fs.String("cwd", "", "")
	iter := fs.Int("iteration", 0, "")
	timeout := fs.Duration("tool-timeout", 60*time.Second, "")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 || *server == "" {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, proxyUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "hgate-mcp proxy: %v\n%s", orMissing(err), proxyUsage)
		return exitCannot
	}
	p := &proxy{out: stdout, server: *server, iter: *iter, timeout: *timeout, pending: map[string]*pendingCall{}}
	if *logPath != "" {
		// A log that cannot be opened never stops the tool: its calls go unlogged.
		if f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			p.log = f
			defer f.Close()
		} else {
			fmt.Fprintf(stderr, "hgate-mcp proxy: %v: tools/calls are not logged\n", err)
		}
	}
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Dir, cmd.Stderr, cmd.Env = *cwd, stderr, toolEnv()
	toServer, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintf(stderr, "hgate-mcp proxy: %v\n", err)
		return exitCannot
	}
	fromServer, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "hgate-mcp proxy: %v\n", err)
		return exitCannot
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "hgate-mcp proxy: %s: %v\n", *server, err)
		return exitCannot
	}
	go func() {
		p.pump(stdin, toServer, p.request)
		toServer.Close() // the client is gone: so is the server's input
	}()
	p.pump(fromServer, nil, p.response)
	_ = cmd.Wait()
	return exitOK
}

// pump reads one message a line from r and hands each to fn, which forwards it to w (or
// the client when w is nil). A line longer than maxLine is passed on in pieces, unread: a
// flood costs no memory.
func (p *proxy) pump(r io.Reader, w io.Writer, fn func(line []byte, w io.Writer)) {
	br := bufio.NewReaderSize(r, maxLine)
	long := false
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == bufio.ErrBufferFull || long:
			long = err == bufio.ErrBufferFull
			p.raw(line, w)
			if long {
				continue
			}
		case len(line) > 0:
			fn(append([]byte(nil), line...), w)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}

// raw forwards part of an over-long line as it is.
func (p *proxy) raw(b []byte, w io.Writer) {
	if w != nil {
		_, _ = w.Write(b)
		return
	}
	p.mu.Lock()
	_, _ = p.out.Write(b)
	p.mu.Unlock()
}

// message is what the proxy reads of a JSON-RPC message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name      string                     `json:"name"`
		Arguments map[string]json.RawMessage `json:"arguments"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// request forwards a client message to the server, noting a tools/call.
func (p *proxy) request(line []byte, w io.Writer) {
	var m message
	if json.Unmarshal(line, &m) == nil && m.Method == "tools/call" && len(m.ID) > 0 {
		l := callLine{Source: "agent", Iteration: p.iter, Server: p.server, Tool: m.Params.Name,
			ArgumentKeys: []string{}, ArgumentSizes: map[string]int{}}
		for k, v := range m.Params.Arguments {
			l.ArgumentKeys = append(l.ArgumentKeys, k)
			l.ArgumentSizes[k] = len(v)
			l.ArgumentBytes += len(v)
		}
		sort.Strings(l.ArgumentKeys)
		id := string(m.ID)
		pc := &pendingCall{line: l, start: time.Now()}
		p.mu.Lock()
		p.pending[id] = pc
		pc.timer = time.AfterFunc(p.timeout, func() { p.expire(id) })
		p.mu.Unlock()
	}
	_, _ = w.Write(line)
}

// response forwards a server message to the client, logging the tools/call it answers.
func (p *proxy) response(line []byte, _ io.Writer) {
	var m message
	if json.Unmarshal(line, &m) == nil && len(m.ID) > 0 && m.Method == "" {
		p.mu.Lock()
		pc, ok := p.pending[string(m.ID)]
		if ok {
			delete(p.pending, string(m.ID))
			pc.timer.Stop()
		}
		p.mu.Unlock()
		if ok {
			status := "completed"
			var r struct {
				IsError bool `json:"isError"`
			}
			if len(m.Error) > 0 || json.Unmarshal(m.Result, &r) == nil && r.IsError {
				status = "error"
			}
			pc.line.ResultBytes = len(m.Result)
			p.write(pc, status)
		} else if p.answered(string(m.ID)) {
			return // answered already, as timed out
		}
	}
	p.mu.Lock()
	_, _ = p.out.Write(line)
	p.mu.Unlock()
}

// expire answers a call the server left unanswered past the tool timeout. Its log line
// is written first, as for an answered call: once the client has the answer it may end
// the proxy, and a line written after that would be lost.
func (p *proxy) expire(id string) {
	p.mu.Lock()
	pc, ok := p.pending[id]
	delete(p.pending, id)
	if ok {
		p.write(pc, "timeout")
		p.timedOut = append(p.timedOut, id)
		type rpcError struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		msg, _ := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   rpcError        `json:"error"`
		}{"2.0", json.RawMessage(id), rpcError{-32000, fmt.Sprintf("%s did not answer within %s", p.server, p.timeout)}})
		_, _ = p.out.Write(append(msg, '\n'))
	}
	p.mu.Unlock()
}

// answered reports whether the proxy answered the call id itself (it timed out).
func (p *proxy) answered(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, t := range p.timedOut {
		if t == id {
			p.timedOut = append(p.timedOut[:i], p.timedOut[i+1:]...)
			return true
		}
	}
	return false
}

// write appends the call's line to the log, in one write.
func (p *proxy) write(pc *pendingCall, status string) {
	if p.log == nil {
		return
	}
	pc.line.Status = status
	pc.line.DurationMS = time.Since(pc.start).Milliseconds()
	pc.line.CreatedAt = time.Now().UTC().Format(time.RFC3339Nano)
	data, err := json.Marshal(pc.line)
	if err != nil {
		return
	}
	_, _ = p.log.Write(append(data, '\n'))
}
