package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const smokeUsage = `Usage: hgate-mcp smoke [--startup-timeout D] [--tool-timeout D] -- COMMAND [ARG...]

Starts COMMAND as an MCP server on stdio (newline-delimited JSON, as the MCP
specification says). Within the startup timeout it sends server/discover (the
2026-07-28 specification's stateless discovery) and, when the server answers that
with an error, as a legacy server does, the initialize handshake; then tools/list
within the tool timeout; ends the server, and prints one JSON line:
{"reward": 1, "tools": [...], "handshake": "server/discover" or "initialize",
"protocol": VERSION} when both answered, else {"reward": 0, "message": ...}.
hgate qualify runs it inside the clean room's sandbox (docs/guide/harness.md, Qualification).
`

// smokeResult is smoke's one line: a reward line the benchmark runner scores, and what
// qualify reads of it.
type smokeResult struct {
	Reward  int      `json:"reward"`
	Tools   []string `json:"tools"`
	Message string   `json:"message,omitempty"`
	// Handshake is how the server was opened: "server/discover" (a modern server,
	// stateless requests) or "initialize" (a legacy one); Protocol the version agreed.
	Handshake string `json:"handshake,omitempty"`
	Protocol  string `json:"protocol,omitempty"`
}

// smokeProtocol is the MCP version smoke asks for first: the 2026-07-28 specification,
// whose client probes with server/discover and falls back to the legacy initialize
// handshake (2025-11-25 and earlier) on any error that is not a modern one — the
// official SDK's client does both. A server speaking either qualifies.
const smokeProtocol = "2026-07-28"

// maxLine bounds one message from a server the agent wrote: a flood is a failure, not
// memory.
const maxLine = 1 << 20

// Smoke is hgate-mcp smoke's main.
func Smoke(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("hgate-mcp smoke", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	startup := fs.Duration("startup-timeout", 10*time.Second, "")
	tool := fs.Duration("tool-timeout", 60*time.Second, "")
	if err := fs.Parse(args); err != nil || fs.NArg() == 0 {
		if err == flag.ErrHelp {
			fmt.Fprint(stdout, smokeUsage)
			return exitOK
		}
		fmt.Fprintf(stderr, "hgate-mcp smoke: %v\n%s", orMissing(err), smokeUsage)
		return exitCannot
	}
	res := smoke(context.Background(), fs.Args(), *startup, *tool, stderr)
	if res.Tools == nil {
		res.Tools = []string{}
	}
	line, _ := json.Marshal(res)
	fmt.Fprintf(stdout, "%s\n", line)
	return exitOK
}

func orMissing(err error) error {
	if err == nil {
		return errors.New("no server command")
	}
	return err
}

// smoke runs one server through initialize and tools/list.
func smoke(ctx context.Context, argv []string, startup, tool time.Duration, stderr io.Writer) smokeResult {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = toolEnv()
	// The server's stderr is passed on only while it runs: what it (or a process it
	// left) writes later cannot follow smoke's result line.
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		return fail("cannot start: %v", err)
	}
	defer passOn(errPipe, stderr)()
	in, err := cmd.StdinPipe()
	if err != nil {
		return fail("cannot start: %v", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fail("cannot start: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return fail("cannot start: %v", err)
	}
	defer func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Process.Wait()
	}()
	peek := &firstBytes{r: bufio.NewReaderSize(out, 64)}
	client := mcp.NewClient(&mcp.Implementation{Name: "hgate-qualify", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, startup)
	defer cancel()
	session, err := client.Connect(cctx, &mcp.IOTransport{Reader: io.NopCloser(peek), Writer: in, MaxLineLength: maxLine},
		&mcp.ClientSessionOptions{ProtocolVersion: smokeProtocol})
	if err != nil {
		return fail("server/discover or initialize: %s", peek.why(err, startup))
	}
	defer session.Close()
	tctx, cancel2 := context.WithTimeout(ctx, tool)
	defer cancel2()
	list, err := session.ListTools(tctx, nil)
	if err != nil {
		return fail("tools/list: %s", peek.why(err, tool))
	}
	res := smokeResult{Reward: 1, Handshake: "initialize"}
	if ir := session.InitializeResult(); ir != nil {
		res.Protocol = ir.ProtocolVersion
		if ir.ProtocolVersion >= smokeProtocol {
			res.Handshake = "server/discover"
		}
	}
	for _, t := range list.Tools {
		res.Tools = append(res.Tools, t.Name)
	}
	sort.Strings(res.Tools)
	return res
}

func fail(format string, a ...any) smokeResult {
	return smokeResult{Message: fmt.Sprintf(format, a...)}
}

// firstBytes remembers the first bytes a server wrote, to tell a server that speaks
// LSP-style Content-Length framing (which MCP's stdio transport is not) from one that
// said nothing.
type firstBytes struct {
	r    io.Reader
	mu   sync.Mutex
	head []byte
}

func (f *firstBytes) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	f.mu.Lock()
	if len(f.head) < 64 {
		f.head = append(f.head, p[:min(n, 64-len(f.head))]...)
	}
	f.mu.Unlock()
	return n, err
}

// why words a failed request: a timeout, Content-Length framing, or the error itself.
func (f *firstBytes) why(err error, limit time.Duration) string {
	f.mu.Lock()
	head := string(f.head)
	f.mu.Unlock()
	switch {
	case strings.HasPrefix(strings.ToLower(head), "content-length:"):
		return "the server speaks Content-Length framing; MCP's stdio transport is newline-delimited JSON (one message a line)"
	case errors.Is(err, context.DeadlineExceeded):
		if head == "" {
			return fmt.Sprintf("no answer within %s", limit)
		}
		return fmt.Sprintf("no answer within %s (it wrote %q)", limit, head)
	}
	return err.Error()
}

// passOn copies r to w until the returned stop is called.
func passOn(r io.Reader, w io.Writer) (stop func()) {
	var mu sync.Mutex
	stopped := false
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			mu.Lock()
			if !stopped {
				w.Write(buf[:n])
			}
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
	}
}

const selfTestUsage = `Usage: hgate-mcp selftest -- COMMAND [ARG...]

Runs an MCP server's self-test, passing its output on while it runs, and prints one
JSON line: {"reward": 1} when it exited 0, else {"reward": 0, "message": ...}.
hgate qualify runs it inside the clean room's sandbox, bounded by the manifest's
self-test timeout (docs/guide/harness.md, Qualification).
`

// SelfTest is hgate-mcp selftest's main.
func SelfTest(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stderr, selfTestUsage)
		return exitCannot
	}
	res := smokeResult{Reward: 1}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = toolEnv()
	out, err1 := cmd.StdoutPipe()
	errs, err2 := cmd.StderrPipe()
	err := errors.Join(err1, err2)
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		res = fail("cannot start: %v", err)
	} else {
		stopOut, stopErr := passOn(out, stdout), passOn(errs, stderr)
		st, err := cmd.Process.Wait()
		stopOut()
		stopErr()
		switch {
		case err != nil:
			res = fail("%v", err)
		case !st.Success():
			res = fail("%s", st)
		}
	}
	res.Tools = nil
	line, _ := json.Marshal(struct {
		Reward  int    `json:"reward"`
		Message string `json:"message,omitempty"`
	}{res.Reward, res.Message})
	fmt.Fprintf(stdout, "\n%s\n", line)
	return exitOK
}
