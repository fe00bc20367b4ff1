// Package timeline stamps when a command's phases and tasks start and end, to find where
// a command's wall time goes (the gaps between tasks, the barriers between steps). With
// HGATE_TIMELINE=1 in hgate's environment each Mark prints one line on standard error,
// "hgate: timeline <seconds since the process started> <event>"; unset, Mark costs one
// boolean test. It writes to no file: a path named in the environment could be one the
// agent can write, and standard error is already the caller's.
package timeline

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Env turns the timeline on when it is "1".
const Env = "HGATE_TIMELINE"

var (
	start = time.Now() // package initialisation: close enough to the process's start
	mu    sync.Mutex
	out   io.Writer = os.Stderr
	// on is read at the first mark, not at package initialisation: the environment's
	// first read copies it into a map, which hgate --version never needs.
	onOnce sync.Once
	on     bool
)

// On reports whether marks are printed, for callers whose event text costs something to
// build.
func On() bool {
	onOnce.Do(func() { on = os.Getenv(Env) == "1" })
	return on
}

// Mark prints the event with the time since the process started, when the timeline is on.
func Mark(format string, args ...any) {
	if !On() {
		return
	}
	line := fmt.Sprintf("hgate: timeline %8.3f "+format+"\n", append([]any{time.Since(start).Seconds()}, args...)...)
	mu.Lock()
	defer mu.Unlock()
	io.WriteString(out, line)
}
