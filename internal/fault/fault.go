// Package fault lets tests crash hgate at a named point, to show that state stays
// consistent and the next command recovers. HGATE_FAULT=<point> makes the process kill
// itself (SIGKILL on Unix) when it reaches that point — no deferred cleanup runs, exactly
// as when the machine loses power or the user runs kill -9. Unset, Point does nothing.
//
// With HGATE_FAULT_PAUSE=<dir> as well, the process stops at the point instead, for a test
// to look at it there (run a reader while a ref's lock is held, or kill it at a moment of
// its choosing): it writes its pid into the named pipe <dir>/reached and goes on once
// something is written into the named pipe <dir>/resume. Both pipes are the test's to make
// (mkfifo); opening them blocks until the other side is there, so neither side polls or
// sleeps. A process pauses once; a point reached again after that runs on.
package fault

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// Env names the point; PauseEnv, when set, the folder of the pipes of a pause.
const (
	Env      = "HGATE_FAULT"
	PauseEnv = "HGATE_FAULT_PAUSE"
)

var paused sync.Once

// Point crashes the process, or pauses it, when HGATE_FAULT names this point.
func Point(name string) {
	if os.Getenv(Env) != name {
		return
	}
	if dir := os.Getenv(PauseEnv); dir != "" {
		paused.Do(func() { pause(dir) })
		return
	}
	if p, err := os.FindProcess(os.Getpid()); err == nil {
		p.Kill()
	}
	select {} // the signal is on its way
}

// pause tells the test it is here and waits for its word. A pipe that cannot be opened
// is the test's mistake; the process then runs on rather than hang.
func pause(dir string) {
	if f, err := os.OpenFile(dir+"/reached", os.O_WRONLY, 0); err == nil {
		fmt.Fprintf(f, "%d\n", os.Getpid())
		f.Close()
	}
	if f, err := os.OpenFile(dir+"/resume", os.O_RDONLY, 0); err == nil {
		io.ReadAll(f)
		f.Close()
	}
}

// DenyPrefix marks a point that is not a crash but a facility the system denies:
// HGATE_FAULT=deny:<what> makes Denied(what) true, so that a test can see what hgate says
// where the kernel lacks something this machine has (Landlock, namespaces).
const DenyPrefix = "deny:"

// Denied reports whether HGATE_FAULT denies what; unset, it never does.
func Denied(what string) bool { return os.Getenv(Env) == DenyPrefix+what }
