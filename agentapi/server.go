package agentapi

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Options configure a Server.
type Options struct {
	// Exec runs "hgate ARGS..." in the repository (the caller forces -C) and
	// returns its exit code. ARGS passed Check. Required.
	Exec func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// Status answers the status command; nil: status exits 2.
	Status func() (Status, error)
	// Dir is where the socket's private directory is made; "": os.TempDir(),
	// or /tmp when that path would be too long for a socket address.
	Dir string
	// Prefix begins the private directory's name; "": "hgate-loop-". The loop puts its
	// pid and start time in it, for the next hgate to remove the folder of a killed loop.
	Prefix string
}

// Server serves the socket until Close.
type Server struct {
	opts   Options
	dir    string
	path   string
	ln     net.Listener
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // connections being served
	turn   chan struct{}  // one command at a time: the repository's work is serial anyway

	mu      sync.Mutex
	running map[int]func()     // cancel of each command in progress
	runs    map[int]chan error // closed when it ends
	next    int
}

// sockName is the socket's name inside its private directory.
const sockName = "hgate.sock"

// maxSockPath is below the 108 bytes of sockaddr_un's path on Linux.
const maxSockPath = 100

// Listen makes a private directory (0700), listens on a socket inside it and
// serves it until Close. Commands run with a context derived from ctx.
func Listen(ctx context.Context, opts Options) (*Server, error) {
	if opts.Exec == nil {
		return nil, errors.New("agentapi: no Exec")
	}
	parent, prefix := opts.Dir, opts.Prefix
	if prefix == "" {
		prefix = "hgate-loop-"
	}
	if parent == "" {
		parent = os.TempDir()
		// A private directory name adds about 30 bytes.
		if len(filepath.Join(parent, prefix+"0123456789", sockName)) > maxSockPath {
			parent = "/tmp"
		}
	}
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return nil, fmt.Errorf("make the loop's socket directory: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("make the loop's socket directory: %w", err)
	}
	path := filepath.Join(dir, sockName)
	ln, err := net.Listen("unix", path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("listen on the loop's socket: %w", err)
	}
	s := &Server{opts: opts, dir: dir, path: path, ln: ln, turn: make(chan struct{}, 1),
		running: map[int]func(){}, runs: map[int]chan error{}}
	s.ctx, s.cancel = context.WithCancel(ctx)
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Env is the agent's environment entry naming the socket.
func (s *Server) Env() string { return EnvSocket + "=" + s.path }

// Drain cancels the commands in progress and waits until they have ended. The
// loop calls it once the agent has gone and before it reaps leftover processes:
// a served gate's tasks are the loop's own children.
func (s *Server) Drain() {
	s.mu.Lock()
	var wait []chan error
	for id, cancel := range s.running {
		cancel()
		wait = append(wait, s.runs[id])
	}
	s.mu.Unlock()
	for _, c := range wait {
		<-c
	}
}

// Close stops serving, cancels the commands in progress, waits for them and
// removes the socket's directory.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.cancel()
	s.wg.Wait()
	if rerr := os.RemoveAll(s.dir); err == nil || errors.Is(err, net.ErrClosed) {
		err = rerr
	}
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer conn.Close()
			s.serve(conn)
		}()
	}
}

// serve answers one connection.
func (s *Server) serve(conn net.Conn) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	out := &frameWriter{conn: conn, ctx: ctx, gone: cancel}
	// A cancelled command (its client went away, Drain, Close) writes nothing more: a
	// write blocked on a client that never reads returns at once, so the command ends.
	stop := context.AfterFunc(ctx, out.cancel)
	defer stop()
	br := bufio.NewReaderSize(io.LimitReader(conn, maxRequest+1), 4096)
	line, err := br.ReadBytes('\n')
	var req request
	if err == nil {
		dec := json.NewDecoder(bytesReader(line))
		dec.DisallowUnknownFields()
		err = dec.Decode(&req)
	}
	if err != nil {
		out.stream(kindStderr).Write([]byte("hgate: the loop's socket: malformed request (expected one JSON line {\"args\": [...]})\n"))
		out.exit(exitCannot)
		return
	}
	// The client sends nothing more; a read returning means it went away.
	go func() {
		var b [1]byte
		_, _ = conn.Read(b[:])
		cancel()
	}()
	stdout, stderr := out.stream(kindStdout), out.stream(kindStderr)
	command, args, err := Check(req.Args)
	if err != nil {
		fmt.Fprintf(stderr, "hgate: %v\n", err)
		out.exit(exitCannot)
		return
	}
	if command == "status" {
		out.exit(s.status(args, stdout, stderr))
		return
	}
	id, done := s.track(cancel)
	defer func() { s.untrack(id); close(done) }()
	// One command at a time; a client that goes away, or Drain, stops the wait.
	select {
	case s.turn <- struct{}{}:
		defer func() { <-s.turn }()
	case <-ctx.Done():
	}
	if ctx.Err() != nil {
		out.exit(exitInterrupted)
		return
	}
	out.exit(s.opts.Exec(ctx, args, stdout, stderr))
}

func (s *Server) track(cancel func()) (int, chan error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next++
	done := make(chan error)
	s.running[s.next], s.runs[s.next] = cancel, done
	return s.next, done
}

func (s *Server) untrack(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, id)
	delete(s.runs, id)
}

// status answers the status command from the loop's callback.
func (s *Server) status(args []string, stdout, stderr io.Writer) int {
	if s.opts.Status == nil {
		fmt.Fprintln(stderr, "hgate: status: the loop does not answer it")
		return exitCannot
	}
	st, err := s.opts.Status()
	if err != nil {
		fmt.Fprintf(stderr, "hgate: status: %v\n", err)
		return exitCannot
	}
	for _, a := range args[1:] {
		if a == "--json" {
			enc := json.NewEncoder(stdout)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(st)
			return 0
		}
	}
	st.WriteText(stdout)
	return 0
}

// writeTimeout bounds every write to a client: one that reads nothing for that long is
// taken for gone, and the rest of the answer is dropped. The loop waits on a served
// command when the agent's phase ends; no client can hold it there.
var writeTimeout = 30 * time.Second

// maxAnswer bounds what a command sends on stdout and stderr together (a bench of 30,000
// unknown task ids says 2.5 MB); beyond it the rest is dropped and a last line says so.
const maxAnswer = 1 << 20

// frameWriter writes frames to the connection; stdout and stderr may be
// written from several goroutines, so each frame is written whole under a lock.
type frameWriter struct {
	mu     sync.Mutex
	conn   net.Conn
	broken bool            // the client went away: drop the rest, the command is cancelled
	sent   int             // payload bytes of stdout and stderr frames
	cut    int64           // bytes dropped past maxAnswer
	ctx    context.Context // the command's: once it ends, writes never wait
	gone   func()          // cancels the command when a write fails
	// dmu orders the deadlines that cancel and write set; inflight is a write that may
	// block, which cancel ends.
	dmu      sync.Mutex
	inflight bool
}

// cancel ends a blocked write at once; later writes make one attempt (tryWrite).
func (f *frameWriter) cancel() {
	f.dmu.Lock()
	defer f.dmu.Unlock()
	if f.inflight {
		_ = f.conn.SetWriteDeadline(time.Unix(1, 0))
	}
}

func (f *frameWriter) frame(kind byte, p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.broken {
		return
	}
	if kind != kindExit {
		if room := maxAnswer - f.sent; len(p) > room {
			f.cut += int64(len(p) - room)
			p = p[:room]
		}
		if len(p) == 0 {
			return
		}
		f.sent += len(p)
	} else if f.cut > 0 {
		f.write(kindStderr, fmt.Appendf(nil, "hgate: the loop's socket: the answer was cut at %d bytes (%d more left out)\n", maxAnswer, f.cut))
	}
	f.write(kind, p)
}

// write sends one frame before writeTimeout, or marks the client gone.
func (f *frameWriter) write(kind byte, p []byte) {
	if f.broken {
		return
	}
	var hdr [5]byte
	hdr[0] = kind
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(p)))
	frame := append(hdr[:], p...)
	f.dmu.Lock()
	done := f.ctx.Err() != nil
	var err error
	if done {
		err = f.conn.SetWriteDeadline(time.Time{}) // tryWrite never blocks
	} else {
		f.inflight = true
		err = f.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	}
	f.dmu.Unlock()
	switch {
	case err != nil:
	case done:
		// A cancelled command's frames (its exit code) reach a client that reads, in
		// one attempt that never waits on one that does not.
		err = tryWrite(f.conn, frame)
	default:
		_, err = f.conn.Write(frame)
		f.dmu.Lock()
		f.inflight = false
		f.dmu.Unlock()
	}
	if err != nil {
		f.broken = true
		if f.gone != nil {
			f.gone() // a client that reads nothing for writeTimeout is gone: stop its command
		}
	}
}

func (f *frameWriter) stream(kind byte) io.Writer { return streamWriter{f, kind} }

func (f *frameWriter) exit(code int) { f.frame(kindExit, []byte(strconv.Itoa(code))) }

type streamWriter struct {
	f    *frameWriter
	kind byte
}

// Write sends p as one or more frames; it never fails, so that a command whose
// client went away ends by its cancelled context, not by a write error.
func (w streamWriter) Write(p []byte) (int, error) {
	for rest := p; len(rest) > 0; {
		n := min(len(rest), 64<<10)
		w.f.frame(w.kind, rest[:n])
		rest = rest[n:]
	}
	return len(p), nil
}
