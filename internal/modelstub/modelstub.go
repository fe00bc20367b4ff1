// Package modelstub serves stand-ins of the model APIs the real agent CLIs call — the
// Anthropic Messages API (claude, at ANTHROPIC_BASE_URL) and the OpenAI Responses API
// (codex, through a model provider's base_url) — on loopback only, for tests. Each plays a
// script of the model's turns: a shell command the CLI runs as a tool, then text. It
// records every request, so a test sees which conversation reached it.
package modelstub

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Turn is one model turn: a shell command to run as a tool call, or (Command empty)
// a text reply that ends the turn.
type Turn struct {
	Command string
	Text    string
	// Tool, when set, is a call of that tool (an MCP tool: mcp__<server>__<tool> in
	// claude) with Input, instead of a shell command.
	Tool  string
	Input map[string]any
}

// Usage is what the stub reports for every main-conversation call.
var Usage = struct{ Input, Output int64 }{Input: 1000, Output: 200}

// Request is one call that reached a stub.
type Request struct {
	Main       bool   // the conversation with the tools, not a side call (title, quota)
	Turn       int    // assistant turns already in the conversation
	FirstUser  string // the conversation's first user text (the session's prompt)
	LastUser   string // its last user text
	ToolResult string // the tool output the CLI sent back, if any
	Tools      []string
	Session    string // the session id the CLI sent (claude's X-Claude-Code-Session-Id, codex's Session-Id)
	System     string // claude: the system prompt, first user message and tool descriptions, as JSON text; codex: the instructions, developer messages and user context
	Header     http.Header
}

// Server is a running stub.
type Server struct {
	URL    string
	script []Turn
	// scripts are played instead of script by the conversations whose first user text
	// holds their key (Script).
	scripts []keyed
	mu      sync.Mutex
	reqs    []Request
}

type keyed struct {
	match string
	turns []Turn
}

// Script has the conversations whose first user text (the session's prompt) contains
// match play turns instead of the stub's script — one script per session, so a run of
// several fresh sessions (the loop's iterations) can script each. Call it before the CLI
// runs.
func (s *Server) Script(match string, turns ...Turn) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts = append(s.scripts, keyed{match, turns})
	return s
}

// Requests returns the calls so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Main returns the main-conversation calls so far.
func (s *Server) Main() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.Main {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) add(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) < 1000 {
		s.reqs = append(s.reqs, r)
	}
}

// turn is the script's turn for a conversation holding r.Turn assistant turns; past the
// script's end its last turn repeats.
func (s *Server) turn(r Request) Turn {
	s.mu.Lock()
	script := s.script
	for _, k := range s.scripts {
		if strings.Contains(r.FirstUser, k.match) && len(k.turns) > 0 {
			script = k.turns
			break
		}
	}
	s.mu.Unlock()
	return script[min(r.Turn, len(script)-1)]
}

// maxBody bounds a request the stubs read.
const maxBody = 16 << 20

// serve starts h on 127.0.0.1 (never another interface) until the test ends.
func serve(t testing.TB, s *Server, h http.Handler) *Server {
	t.Helper()
	if len(s.script) == 0 {
		t.Fatal("modelstub: an empty script")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.MaxBytesHandler(h, maxBody), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.URL = "http://" + ln.Addr().String()
	return s
}

// sse writes one server-sent event.
func sse(w io.Writer, name string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// text flattens a message content that is a string or a list of blocks.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		switch bl.Type {
		case "text", "input_text", "output_text":
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// NeedCLI skips t under -short, or when the named CLI (claude, codex) is not on PATH:
// the tests that run the real agent CLIs against the stubs.
func NeedCLI(t testing.TB, name string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (.ci/run installs it: npm install -g --ignore-scripts @anthropic-ai/claude-code @openai/codex): %v", name, err)
	}
}
