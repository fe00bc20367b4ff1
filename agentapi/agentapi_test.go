package agentapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // normalized; nil: refused
		err  string
	}{
		{args: []string{"gate"}, want: []string{"gate"}},
		{args: []string{"--json", "gate", "--fail-fast", "-v"}, want: []string{"gate", "--json", "--fail-fast", "-v"}},
		{args: []string{"bench", "--tasks", "a01", "--tasks=-C"}, want: []string{"bench", "--tasks=a01", "--tasks=-C"}},
		{args: []string{"guard", "--verbose"}, want: []string{"guard", "-v"}},
		{args: []string{"status", "--json"}, want: []string{"status", "--json"}},
		{args: []string{"-C", "/elsewhere", "gate"}, err: "-C is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"gate", "--config=other.yaml"}, err: "--config is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"gate", "--no-clean-room"}, err: "--no-clean-room is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"gate", "--rerun"}, err: "--rerun is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"--no-wait", "bench"}, err: "--no-wait is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"-vC.", "gate"}, err: "-vC. is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"gate", "--json=false"}, err: "--json is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"bench", "--fail-fast"}, err: "--fail-fast is not allowed through the loop's socket for bench (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"gate", "--tasks=a"}, err: "--tasks is not allowed through the loop's socket for gate (allowed: --json, -v, --fail-fast for gate, --tasks for bench)"},
		{args: []string{"bench", "--tasks"}, err: "--tasks: expected a task id"},
		{args: []string{"record"}, err: "record is not served through the loop's socket (served: bench, gate, guard, status)"},
		{args: []string{"gate", "extra"}, err: `unexpected argument "extra"`},
		{args: []string{}, err: "no command given (served: bench, gate, guard, status)"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, got, err := Check(tc.args)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("Check(%q) = %q, %v; want error %q", tc.args, got, err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Fatalf("Check(%q) = %q, %v; want %q", tc.args, got, err, tc.want)
			}
		})
	}
}

// fakeHgate stands in for the CLI: "gate" writes to both streams and exits by
// the tree named in its environment; "guard" blocks until released.
type fakeHgate struct {
	mu      sync.Mutex
	calls   [][]string
	started chan string
	release chan struct{}
	code    int
}

func (f *fakeHgate) exec(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f.mu.Lock()
	f.calls = append(f.calls, args)
	code := f.code
	f.mu.Unlock()
	switch args[0] {
	case "gate":
		fmt.Fprintln(stdout, "out 1")
		fmt.Fprintln(stderr, "err 1")
		fmt.Fprintln(stdout, "out 2")
		return code
	case "guard":
		f.started <- args[len(args)-1]
		select {
		case <-f.release:
		case <-ctx.Done():
			fmt.Fprintln(stderr, "cancelled")
			return 130
		}
		fmt.Fprintln(stdout, strings.Repeat("x", 200000)) // several frames
		return 0
	}
	return 2
}

func start(t *testing.T, f *fakeHgate, status func() (Status, error)) *Server {
	t.Helper()
	s, err := Listen(context.Background(), Options{Exec: f.exec, Status: status})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type recorder struct {
	mu  sync.Mutex
	all bytes.Buffer // both streams in order, tagged
	out bytes.Buffer
}

func (r *recorder) writer(tag string, b *bytes.Buffer) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		fmt.Fprintf(&r.all, "%s:%s", tag, p)
		if b != nil {
			b.Write(p)
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestServeMirrorsOutputAndExitCodes(t *testing.T) {
	for _, code := range []int{0, 1, 2} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			f := &fakeHgate{code: code}
			s := start(t, f, nil)
			var r recorder
			got, err := Call(context.Background(), s.Path(), []string{"--json", "gate"}, r.writer("o", &r.out), r.writer("e", nil))
			if err != nil || got != code {
				t.Fatalf("Call = %d, %v; want %d", got, err, code)
			}
			if want := "o:out 1\ne:err 1\no:out 2\n"; r.all.String() != want {
				t.Errorf("output %q, want %q", r.all.String(), want)
			}
			if want := [][]string{{"gate", "--json"}}; !slices.EqualFunc(f.calls, want, slices.Equal) {
				t.Errorf("Exec got %q, want %q", f.calls, want)
			}
		})
	}
}

func TestServeRefuses(t *testing.T) {
	f := &fakeHgate{}
	s := start(t, f, nil)
	var out, errb bytes.Buffer
	code, err := Call(context.Background(), s.Path(), []string{"gate", "--no-clean-room"}, &out, &errb)
	if err != nil || code != 2 {
		t.Fatalf("Call = %d, %v; want 2", code, err)
	}
	if want := "hgate: --no-clean-room is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)\n"; errb.String() != want || out.Len() != 0 {
		t.Errorf("stderr %q stdout %q; want %q", errb.String(), out.String(), want)
	}
	if len(f.calls) != 0 {
		t.Errorf("Exec ran %q", f.calls)
	}
	// A malformed request gets an answer too.
	code, err = Call(context.Background(), s.Path(), nil, &out, &errb)
	if err != nil || code != 2 {
		t.Fatalf("empty Call = %d, %v; want 2", code, err)
	}
}

func TestServeStatus(t *testing.T) {
	best := 0.75
	s := start(t, &fakeHgate{}, func() (Status, error) {
		return Status{Iteration: 3, RunID: "r1", Best: &best, SuiteSize: 4, Allow: []string{"agent.sh", "lib/"}}, nil
	})
	var out, errb bytes.Buffer
	if code, err := Call(context.Background(), s.Path(), []string{"status"}, &out, &errb); code != 0 || err != nil {
		t.Fatalf("status = %d, %v: %s", code, err, errb.String())
	}
	want := "iteration 3 of run r1\nbest val_score: 0.7500\nregression suite: 4 task(s)\nallow: agent.sh lib/\n"
	if out.String() != want {
		t.Errorf("status printed %q, want %q", out.String(), want)
	}
	out.Reset()
	if code, err := Call(context.Background(), s.Path(), []string{"status", "--json"}, &out, &errb); code != 0 || err != nil {
		t.Fatalf("status --json = %d, %v", code, err)
	}
	if want := `{"iteration":3,"run_id":"r1","best_val_score":0.75,"suite_size":4,"allow":["agent.sh","lib/"]}` + "\n"; out.String() != want {
		t.Errorf("status --json printed %q, want %q", out.String(), want)
	}
}

// Two clients at once: the second command starts only after the first ended,
// and each gets exactly its own output.
func TestServeTwoClients(t *testing.T) {
	f := &fakeHgate{started: make(chan string, 2), release: make(chan struct{})}
	s := start(t, f, nil)
	type result struct {
		code int
		err  error
		out  string
	}
	results := make(chan result, 2)
	call := func(flag string) {
		var out, errb bytes.Buffer
		code, err := Call(context.Background(), s.Path(), []string{"guard", flag}, &out, &errb)
		results <- result{code, err, out.String()}
	}
	go call("--json")
	first := <-f.started
	go call("-v")
	select {
	case second := <-f.started:
		t.Fatalf("%s started while %s ran", second, first)
	default:
	}
	f.release <- struct{}{}
	r1 := <-results
	second := <-f.started
	if second == first {
		t.Fatalf("the same client ran twice")
	}
	f.release <- struct{}{}
	r2 := <-results
	want := strings.Repeat("x", 200000) + "\n"
	for _, r := range []result{r1, r2} {
		if r.code != 0 || r.err != nil || r.out != want {
			t.Errorf("client got %d, %v and %d bytes; want 0 and %d bytes", r.code, r.err, len(r.out), len(want))
		}
	}
}

// A client that goes away cancels its command; Close removes the directory.
func TestServeCancelAndClose(t *testing.T) {
	f := &fakeHgate{started: make(chan string, 1), release: make(chan struct{})}
	s, err := Listen(context.Background(), Options{Exec: f.exec})
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Dir(s.Path())); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("socket directory: %v, %v; want mode 0700", fi, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Call(ctx, s.Path(), []string{"guard"}, io.Discard, io.Discard)
		done <- err
	}()
	<-f.started
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Call after cancel: %v, want context.Canceled", err)
	}
	s.Drain() // returns once the command saw its context end
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Dir(s.Path())); !os.IsNotExist(err) {
		t.Errorf("socket directory left after Close: %v", err)
	}
	_, err = Call(context.Background(), s.Path(), []string{"gate"}, io.Discard, io.Discard)
	if err == nil || !strings.HasPrefix(err.Error(), "cannot reach the loop's socket (HGATE_LOOP_SOCKET=") {
		t.Errorf("Call after Close: %v", err)
	}
}

// Drain ends the command running and the one waiting for its turn, and the
// socket serves again afterwards.
func TestServeDrain(t *testing.T) {
	f := &fakeHgate{started: make(chan string, 2), release: make(chan struct{})}
	s := start(t, f, nil)
	codes := make(chan int, 2)
	call := func(flag string) {
		code, _ := Call(context.Background(), s.Path(), []string{"guard", flag}, io.Discard, io.Discard)
		codes <- code
	}
	go call("--json")
	<-f.started
	go call("-v")
	for { // until the second request waits for its turn
		s.mu.Lock()
		n := len(s.running)
		s.mu.Unlock()
		if n == 2 {
			break
		}
		runtime.Gosched()
	}
	s.Drain()
	if a, b := <-codes, <-codes; a != 130 || b != 130 {
		t.Fatalf("exit codes after Drain: %d, %d; want 130, 130", a, b)
	}
	if code, err := Call(context.Background(), s.Path(), []string{"gate"}, io.Discard, io.Discard); code != 0 || err != nil {
		t.Fatalf("gate after Drain: %d, %v", code, err)
	}
}

// A client that sends a request and never reads cannot hold a served command: Drain
// (the end of the agent's phase) ends its blocked write, and the command with it. A
// client that reads gets at most maxAnswer bytes and a line saying what was cut.
func TestServeBoundedAnswer(t *testing.T) {
	big := strings.Repeat("hgate: task \"x\" is not a train task\n", 70000) // 2.5 MB
	started, wrote := make(chan struct{}, 2), make(chan struct{}, 2)
	s, err := Listen(context.Background(), Options{Exec: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		started <- struct{}{}
		fmt.Fprint(stderr, big)
		wrote <- struct{}{}
		return 2
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	var stderr bytes.Buffer
	code, err := Call(context.Background(), s.Path(), []string{"bench"}, io.Discard, &stderr)
	if code != 2 || err != nil {
		t.Fatalf("bench: %d, %v", code, err)
	}
	<-started
	<-wrote
	got := stderr.String()
	want := fmt.Sprintf("hgate: the loop's socket: the answer was cut at %d bytes (%d more left out)\n", maxAnswer, len(big)-maxAnswer)
	if got != big[:maxAnswer]+want {
		t.Errorf("answer of %d bytes ends %q; want %d bytes then %q", len(got), got[max(0, len(got)-100):], maxAnswer, want)
	}

	// Now a client that never reads.
	conn, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(`{"args": ["bench"]}` + "\n")); err != nil {
		t.Fatal(err)
	}
	<-started
	s.Drain()
	<-wrote
}

// A client that reads nothing for writeTimeout is taken for gone: its command is
// cancelled, and the turn is free for the next one.
func TestServeWriteTimeout(t *testing.T) {
	defer func(d time.Duration) { writeTimeout = d }(writeTimeout)
	writeTimeout = 10 * time.Millisecond
	big := strings.Repeat("x", maxAnswer)
	s, err := Listen(context.Background(), Options{Exec: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		if args[0] == "bench" {
			fmt.Fprint(stdout, big)
			<-ctx.Done() // cancelled by the write that timed out
			return 130
		}
		return 0
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	conn, err := net.Dial("unix", s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(`{"args": ["bench"]}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if code, err := Call(context.Background(), s.Path(), []string{"guard"}, io.Discard, io.Discard); code != 0 || err != nil {
		t.Fatalf("guard after a stalled bench: %d, %v", code, err)
	}
}
