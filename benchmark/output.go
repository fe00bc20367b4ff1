package benchmark

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/fsafe"
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

// TraceHead and TraceTail bound a trace on disk: a command's first TraceHead bytes
// of output go straight to the file, its last TraceTail bytes are kept in memory
// and appended when it ends, and one line in between says how much was cut. A task
// printing 400 MB neither fills the disk nor hgate's memory.
const (
	TraceHead = 1 << 20
	TraceTail = 1 << 20
	// TraceMax bounds a trace read back: head, tail and hgate's own lines, with room.
	TraceMax = TraceHead + TraceTail + 64<<10
)

// lastBytes keeps the last n bytes written to it in a ring of n bytes, allocated on
// the first write.
type lastBytes struct {
	n     int
	buf   []byte
	pos   int  // where the next byte goes
	full  bool // the ring has wrapped: buf[pos:] then buf[:pos] is the order
	total int64
}

func (l *lastBytes) write(p []byte) {
	l.total += int64(len(p))
	if l.buf == nil {
		l.buf = make([]byte, l.n)
	}
	if len(p) >= l.n {
		copy(l.buf, p[len(p)-l.n:])
		l.pos, l.full = 0, true
		return
	}
	end := l.pos + len(p)
	if end >= l.n {
		l.full = true
	}
	k := copy(l.buf[l.pos:], p)
	copy(l.buf, p[k:])
	l.pos = end % l.n
}

// writeTo writes the kept bytes in order.
func (l *lastBytes) writeTo(w io.Writer) error {
	if l.full {
		if _, err := w.Write(l.buf[l.pos:]); err != nil {
			return err
		}
	}
	_, err := w.Write(l.buf[:l.pos])
	return err
}

// taskOutput collects one command's output: stdout into the tail (for
// scoring), stdout and stderr together into the trace file, if any, cut to
// its first TraceHead and last TraceTail bytes.
type taskOutput struct {
	mu       sync.Mutex
	tail     tail
	file     *os.File // nil: no trace kept; else an unnamed file of hgate's (fsafe.TempFile)
	head     int64    // bytes written to file so far, up to TraceHead
	rest     lastBytes
	last     byte   // the last byte traced, 0 before the first
	dir      string // the trace's folder, {trace_dir}, which the tasks can write
	final    string // the trace's name in dir, <name>.log; "": no trace kept
	writeErr error
	// denyHint, for a task under a read allowlist, is the line its trace gets when its
	// output says a path was denied; denied says it did.
	denyHint string
	denied   bool
}

// DenyHint is the line a sandboxed task's trace ends with when its output says
// "Permission denied": the sandbox's read allowlist may be why.
const DenyHint = "hgate: a path was denied: in the sandbox a task may read only its room, the system's folders (/usr /lib* /bin /sbin /etc /opt), its PATH, HOME, TMPDIR, {trace_dir} and the caches, and write only HOME, TMPDIR, {trace_dir}, the caches and clean_room.writable; name other paths it must read in clean_room.read (docs/security/integrity.md)"

// newTaskOutput prepares the output of one command. With keep, the trace goes to
// <dir>/<name>.log when the command has ended: until then it is in an unnamed file of
// hgate's, out of every task's reach, since dir is {trace_dir}, which every task can
// write (a name hgate wrote to there could be a planted link).
func newTaskOutput(keep bool, dir, name string) *taskOutput {
	t := &taskOutput{rest: lastBytes{n: TraceTail}}
	if keep {
		t.dir, t.final = dir, name+".log"
	}
	return t
}

// start opens the trace file and starts the command with its output wired
// to t.
func (t *taskOutput) start(spec procSpec) (*process, error) {
	if t.final != "" {
		f, err := fsafe.TempFile("")
		if err != nil {
			return nil, fmt.Errorf("create trace: %w", err)
		}
		t.file = f
	}
	if spec.sandbox != nil && len(spec.sandbox.Read) > 0 {
		t.denyHint = DenyHint
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

// finish writes the trace to its folder, by descriptor (fsafe: whatever a task planted
// at its name is replaced, never written through), and closes it. It returns a problem
// to report when the trace could not be written, else "".
func (t *taskOutput) finish() string {
	if t.file == nil {
		return ""
	}
	err := t.writeErr
	if err == nil && t.rest.total > 0 {
		err = t.writeRest()
	}
	if err == nil && t.denied && t.denyHint != "" {
		_, err = fmt.Fprintf(t.file, "\n%s\n", t.denyHint)
	}
	if err == nil {
		err = t.publish()
	}
	if cerr := t.file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Sprintf("trace %s: %v", filepath.Join(t.dir, t.final), err)
	}
	return ""
}

// discard closes the trace of a command that never ran, unpublished.
func (t *taskOutput) discard() {
	if t.file != nil {
		t.file.Close()
	}
}

// publish copies the whole trace to <dir>/<final>.
func (t *taskOutput) publish() error {
	if _, err := t.file.Seek(0, io.SeekStart); err != nil {
		return err
	}
	root, err := fsafe.OpenRoot(t.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Replace(t.final, t.file, 0o644); err != nil {
		return err
	}
	fault.Point("trace-published") // one task's trace in {trace_dir}, the others' maybe not
	return nil
}

// endWith adds a last line of hgate's own to the trace (why the command was stopped), after
// everything the command printed: on a line of its own, and kept however much was cut.
func (t *taskOutput) endWith(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.file == nil || t.writeErr != nil {
		return
	}
	if t.last != 0 && t.last != '\n' {
		line = "\n" + line
	}
	t.trace([]byte(line + "\n"))
}

// trace writes p to the head of the trace file while it lasts, then to the ring.
func (t *taskOutput) trace(p []byte) {
	if len(p) > 0 {
		t.last = p[len(p)-1]
	}
	if n := min(int64(len(p)), TraceHead-t.head); n > 0 {
		if _, err := t.file.Write(p[:n]); err != nil {
			t.writeErr = err
		}
		t.head += n
		p = p[n:]
	}
	if len(p) > 0 {
		t.rest.write(p)
	}
}

// writeRest appends the output kept past the head, after a line saying what was cut.
func (t *taskOutput) writeRest() error {
	if cut := t.rest.total - TraceTail; cut > 0 {
		if _, err := fmt.Fprintf(t.file, "\nhgate: trace cut: %d bytes left out here (a trace keeps the first %d MiB and the last %d MiB of a task's output)\n",
			cut, TraceHead>>20, TraceTail>>20); err != nil {
			return err
		}
	}
	return t.rest.writeTo(t.file)
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
	if w.t.denyHint != "" && !w.t.denied && bytes.Contains(p, []byte("ermission denied")) {
		w.t.denied = true
	}
	if w.t.file != nil && w.t.writeErr == nil {
		w.t.trace(p)
	}
	return len(p), nil
}

var _ io.Writer = outWriter{}
