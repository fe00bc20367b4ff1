// Package lock keeps hgate to one running command per repository.
//
// The commands that run the benchmark or write state (gate, record, prepare,
// bench, loop) take an exclusive flock(2) on a file in the git directory. The
// kernel is the only authority on who holds it: a holder that dies, even by
// SIGKILL, has its lock released when its descriptors close, so there is never
// a stale lock to break by hand. The small JSON the holder writes into the file
// (pid, process start time, command, wall-clock start) is only there to tell
// the next invocation whom it is waiting for, and to say so when it takes over
// after a holder that died without releasing.
//
// The package needs flock(2): elsewhere Acquire fails with
// proc.ErrNotSupported.
package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Options say how Acquire behaves when another process holds the lock.
type Options struct {
	// Wait: true waits until the holder finishes; false fails at once with
	// *HeldError (--no-wait).
	Wait bool
	// Notify receives one line when Acquire starts waiting (and again if the
	// holder changes) and one when it takes over after a holder that died
	// without releasing; nil = silent.
	Notify io.Writer
	// Command is what this process is doing ("gate", "loop", ...), recorded
	// in the lock for the messages of the next invocation.
	Command string
}

// Lock is held by one hgate process per repository (gate, record, prepare,
// bench, loop). Locks are per open file, not per process: a second Acquire of
// the same path in the same process waits for the first like any other, so a
// command takes the lock once and passes it down rather than re-acquiring.
type Lock struct {
	f    *os.File
	path string
}

// HeldError is returned by Acquire with Options.Wait false when another
// process holds the lock. PID is 0 and Command "" when the holder had not yet
// written its details.
type HeldError struct {
	PID     int
	Command string
	Started time.Time
	Path    string // the lock file
}

func (e *HeldError) Error() string {
	if e.PID <= 0 {
		return fmt.Sprintf("another hgate is running here (it holds %s); wait for it or stop it (--no-wait refused to wait)", e.Path)
	}
	return fmt.Sprintf("another hgate is running here: %s (pid %d, started %s); wait for it or stop it (--no-wait refused to wait)",
		holderName(e.Command), e.PID, e.Started.UTC().Format("2006-01-02 15:04:05 UTC"))
}

// owner is the lock file's content. StartTicks is the process start time from
// /proc/<pid>/stat (Linux; 0 elsewhere): with it a pid the kernel has since
// given to another process is not mistaken for the holder.
type owner struct {
	PID        int       `json:"pid"`
	StartTicks uint64    `json:"start_ticks,omitempty"`
	Command    string    `json:"command"`
	Started    time.Time `json:"started"`
}

// Polling rather than a blocking flock in a goroutine: a blocked flock(2)
// cannot be interrupted when ctx is cancelled, and the goroutine would linger
// holding a descriptor that could still win the lock after we gave up.
const (
	firstPoll = 10 * time.Millisecond
	maxPoll   = 250 * time.Millisecond
)

// Acquire takes the lock at path (e.g. <git common dir>/hgate.lock), creating
// the file if needed. When another process holds it, Acquire fails with
// *HeldError (opts.Wait false) or waits, telling opts.Notify whom it waits
// for, until the holder finishes or ctx is done (then the error wraps
// ctx.Err()).
func Acquire(ctx context.Context, path string, opts Options) (*Lock, error) {
	var announced *owner // the holder last named to opts.Notify
	poll := firstPoll
	for {
		f, err := openLockFile(path)
		if err != nil {
			return nil, fmt.Errorf("open lock file %s: %w", path, err)
		}
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			l, err := claim(f, path, opts)
			if err != nil || l != nil {
				return l, err
			}
			// The file we locked is no longer the one at path: lock the new one.
			continue
		}

		holder := readHolder(f)
		f.Close()
		if !opts.Wait {
			return nil, &HeldError{PID: holder.PID, Command: holder.Command, Started: holder.Started, Path: path}
		}
		if opts.Notify != nil && newHolder(announced, holder) {
			fmt.Fprintf(opts.Notify, "waiting for %s to finish...\n", describe(holder, path))
			announced = &holder
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("waiting for %s: %w", describe(holder, path), ctx.Err())
		case <-t.C:
		}
		poll = min(2*poll, maxPoll)
	}
}

// claim finishes an acquisition once f is locked: it checks that f is still
// the file at path, reports a holder that died without releasing, and writes
// this process's details. It returns nil, nil when the file was replaced.
func claim(f *os.File, path string, opts Options) (*Lock, error) {
	// Lock-then-verify: if the file was removed or replaced between our open
	// and our flock (someone deleted it by hand), our lock is on an orphan
	// inode that nobody else will ever look at, so it excludes no one.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if cur, err := os.Lstat(path); err != nil || !os.SameFile(fi, cur) {
		f.Close()
		return nil, nil
	}

	// Release empties the file before unlocking, so content here means the
	// last holder ended without releasing (killed, crashed).
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read lock file %s: %w", path, err)
	}
	if len(data) > 0 && opts.Notify != nil {
		if prev, ok := parseOwner(data); ok {
			why := "no longer running"
			if lingering(prev) {
				why = "it no longer holds the lock"
			}
			fmt.Fprintf(opts.Notify, "took over a stale lock from pid %d (%s)\n", prev.PID, why)
		} else {
			fmt.Fprintf(opts.Notify, "took over a stale lock (%s held unreadable details)\n", path)
		}
	}

	me := owner{PID: os.Getpid(), Command: opts.Command, Started: time.Now().UTC().Truncate(time.Second)}
	me.StartTicks, _ = startTicks(me.PID)
	out, err := json.Marshal(me)
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.WriteAt(append(out, '\n'), 0)
	}
	if err != nil {
		unlock(f)
		f.Close()
		return nil, writeError(path, err)
	}
	return &Lock{f: f, path: path}, nil
}

// writeError names the lock file once: the write's own error already names it by its
// absolute path, which the message would otherwise repeat.
func writeError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("write lock file %s: %w", path, err)
}

// Release gives the lock up. It empties the file and unlocks it but leaves it
// in place: unlinking would race with a process that has the file open and is
// about to flock it (it would then hold a lock on a name-less inode while a
// third process creates and locks a new file — two holders). Emptying happens
// before unlocking so it can never wipe the next holder's details. Release on
// a released Lock does nothing.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	errT := f.Truncate(0)
	errU := unlock(f)
	errC := f.Close() // closing would drop the lock even if unlock failed
	if err := errors.Join(errT, errU, errC); err != nil {
		return fmt.Errorf("release lock %s: %w", l.path, err)
	}
	return nil
}

// readHolder reads the details of the process holding f's lock. A holder
// writes them right after locking, so an empty or partial file, or the
// details of a dead predecessor not yet overwritten, are re-read briefly
// before settling for what is there.
func readHolder(f *os.File) owner {
	var last owner
	for range 20 {
		data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
		if err != nil {
			break
		}
		if o, ok := parseOwner(data); ok {
			if running(o) {
				return o
			}
			last = o
		}
		time.Sleep(5 * time.Millisecond)
	}
	return last
}

// lingering reports whether the process o describes is still running a
// moment after its lock was found free. A killed process drops its locks
// before it turns into a zombie, so a dying holder can look alive for an
// instant: give it that instant before calling it alive.
func lingering(o owner) bool {
	for range 20 {
		if !running(o) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// newHolder reports whether holder is worth a new "waiting for" line. A
// locked file without details is a holder between locking and writing them,
// or one releasing (Release empties before it unlocks): once someone has been
// named, that is no new holder.
func newHolder(announced *owner, holder owner) bool {
	if announced == nil {
		return true
	}
	return holder.PID > 0 && !sameOwner(*announced, holder)
}

func sameOwner(a, b owner) bool {
	return a.PID == b.PID && a.StartTicks == b.StartTicks && a.Command == b.Command && a.Started.Equal(b.Started)
}

func parseOwner(data []byte) (owner, bool) {
	var o owner
	if err := json.Unmarshal(data, &o); err != nil || o.PID <= 0 {
		return owner{}, false
	}
	return o, true
}

// running reports whether the process o describes is still alive: its pid
// exists and, where start times are known, it started when o says.
func running(o owner) bool {
	if !alive(o.PID) || exited(o.PID) {
		return false
	}
	if o.StartTicks != 0 {
		if t, err := startTicks(o.PID); err == nil && t != o.StartTicks {
			return false // the pid now belongs to another process
		}
	}
	return true
}

// describe names a holder for the waiting message, e.g.
// "hgate gate (pid 123, started 03:12:00)".
func describe(o owner, path string) string {
	if o.PID <= 0 {
		return "another hgate (holding " + path + ")"
	}
	started := o.Started.Local()
	layout := "15:04:05"
	if y, m, d := started.Date(); y != time.Now().Year() || m != time.Now().Month() || d != time.Now().Day() {
		layout = "2006-01-02 15:04:05"
	}
	return fmt.Sprintf("%s (pid %d, started %s)", holderName(o.Command), o.PID, started.Format(layout))
}

func holderName(command string) string {
	if command == "" {
		return "hgate"
	}
	return "hgate " + command
}
