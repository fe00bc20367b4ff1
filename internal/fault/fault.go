// Package fault lets tests crash hgate at a named point, to show that state stays
// consistent and the next command recovers. HGATE_FAULT=<point> makes the process kill
// itself (SIGKILL on Unix) when it reaches that point — no deferred cleanup runs, exactly
// as when the machine loses power or the user runs kill -9. Unset, Point does nothing.
package fault

import "os"

// Point crashes the process when HGATE_FAULT names this point.
func Point(name string) {
	if os.Getenv("HGATE_FAULT") == name {
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill()
		}
		select {} // the signal is on its way
	}
}
