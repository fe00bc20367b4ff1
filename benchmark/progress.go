package benchmark

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// now is the clock of progress lines; tests replace it.
var now = time.Now

// NewProgress returns a Request.Progress callback that reports on w, e.g.
// "train  17/40  passed 12  elapsed 0:42  eta 1:05". On a terminal it
// redraws one line, going back with "\r" and padding over a longer previous
// line, and ends the line when done reaches total; elsewhere (a pipe or a
// log file, with -v) it writes one plain line per finished task, so a log
// holds no carriage returns. The clock starts when NewProgress is called.
// Whether to show progress at all is the caller's choice (see IsTerminal).
func NewProgress(w io.Writer, label string, total int) func(done, total int, r Result) {
	return newProgress(w, label, total, IsTerminal(w), true)
}

// NewCountProgress is NewProgress without the pass count, "test  3/14  elapsed 0:12  eta
// 0:44": for the held-out split, where a count that moves with one task's result would
// name that result.
func NewCountProgress(w io.Writer, label string, total int) func(done, total int, r Result) {
	return newProgress(w, label, total, IsTerminal(w), false)
}

func newProgress(w io.Writer, label string, total int, redraw, countPasses bool) func(done, total int, r Result) {
	var (
		mu      sync.Mutex
		start   = now()
		passed  int
		lastLen int
	)
	return func(done, n int, r Result) {
		mu.Lock()
		defer mu.Unlock()
		if n <= 0 {
			n = total
		}
		if r.Passed() {
			passed++
		}
		elapsed := now().Sub(start)
		eta := "-:--"
		if done > 0 {
			eta = clock(elapsed * time.Duration(n-done) / time.Duration(done))
		}
		line := fmt.Sprintf("%s  %d/%d  passed %d  elapsed %s  eta %s", label, done, n, passed, clock(elapsed), eta)
		if !countPasses {
			line = fmt.Sprintf("%s  %d/%d  elapsed %s  eta %s", label, done, n, clock(elapsed), eta)
		}
		if !redraw {
			fmt.Fprintln(w, line)
			return
		}
		pad := ""
		if len(line) < lastLen {
			pad = strings.Repeat(" ", lastLen-len(line))
		}
		lastLen = len(line)
		end := ""
		if done >= n {
			end = "\n"
		}
		fmt.Fprintf(w, "\r%s%s%s", line, pad, end)
	}
}

// clock formats d as m:ss, or h:mm:ss from an hour on.
func clock(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	if s < 0 {
		s = 0
	}
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}

// IsTerminal reports whether w is a terminal, e.g. to decide whether to
// show progress on stderr.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	return term.IsTerminal(int(f.Fd()))
}
