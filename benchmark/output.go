package benchmark

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/hgate/hgate/internal/proc"
)

// tail keeps the last TailLimit bytes written to it.
type tail struct{ buf []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	// Trim only once the slack doubles, so trimming stays amortised O(1).
	if len(t.buf) > 2*TailLimit {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-TailLimit:]...)
	}
	return len(p), nil
}

// Bytes returns at most the last TailLimit bytes written.
func (t *tail) Bytes() []byte {
	if len(t.buf) > TailLimit {
		return t.buf[len(t.buf)-TailLimit:]
	}
	return t.buf
}

// taskOutput collects one command's output: stdout into the tail (for
// scoring), stdout and stderr together into the trace file, if any.
type taskOutput struct {
	mu       sync.Mutex
	tail     tail
	file     *os.File // nil: no trace kept
	partial  string
	final    string
	writeErr error
}

// newTaskOutput prepares the output of one command. With keep, the trace
// goes to <dir>/<name>.log via a .partial file.
func newTaskOutput(keep bool, dir, name string) *taskOutput {
	t := &taskOutput{}
	if keep {
		t.final = filepath.Join(dir, name+".log")
		t.partial = t.final + ".partial"
	}
	return t
}

// start opens the trace file and starts the command with its output wired
// to t.
func (t *taskOutput) start(spec procSpec) (*proc.Process, error) {
	if t.final != "" {
		f, err := os.OpenFile(t.partial, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, fmt.Errorf("create trace: %w", err)
		}
		t.file = f
	}
	spec.stdout = outWriter{t, true}
	spec.stderr = outWriter{t, false}
	p, err := startProc(spec)
	if err != nil && t.file != nil {
		// Say in the trace why it is empty: traces are what the agent reads.
		fmt.Fprintf(t.file, "hgate: cannot start: %v\n", err)
	}
	return p, err
}

// finish closes the trace and gives it its final name. It returns a
// problem to report when the trace could not be written, else "".
func (t *taskOutput) finish() string {
	if t.file == nil {
		return ""
	}
	err := t.writeErr
	if cerr := t.file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(t.partial, t.final)
	}
	if err != nil {
		return fmt.Sprintf("trace %s: %v", t.final, err)
	}
	return ""
}

// outWriter is one of a command's two streams. A failing trace write is
// remembered, not returned: returning it would stop the copy and leave the
// command blocked on a full pipe.
type outWriter struct {
	t      *taskOutput
	stdout bool
}

func (w outWriter) Write(p []byte) (int, error) {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	if w.stdout {
		w.t.tail.Write(p)
	}
	if w.t.file != nil && w.t.writeErr == nil {
		if _, err := w.t.file.Write(p); err != nil {
			w.t.writeErr = err
		}
	}
	return len(p), nil
}

var _ io.Writer = outWriter{}
