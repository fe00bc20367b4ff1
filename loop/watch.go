package loop

import (
	"fmt"
	"strings"
	"time"

	"github.com/hgate/hgate/internal/human"
)

// agentWatchEvery is how often the loop says, with progress on, that the agent still runs.
var agentWatchEvery = 30 * time.Second

// watchAgent tells a watching human (progress on: a terminal, or -v) that the agent is
// running, where its output goes, and then every agentWatchEvery for how long and what it
// printed last. The returned func stops it.
func (r *runner) watchAgent(n int, stdout string) (stop func()) {
	w := r.env.Progress
	if w == nil {
		return func() {}
	}
	start := r.now()
	fmt.Fprintf(w, "[loop] iteration %d: agent running; its output: %s\n", n, stdout)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(agentWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				last := describeLast(stdout)
				if len(last) > 100 {
					last = last[:100] + "…"
				}
				fmt.Fprintf(w, "[loop] iteration %d: agent running for %s; last output: %s\n", n, r.now().Sub(start).Round(time.Second), last)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// lastLine is the last non-empty line of s, printable, or "(none yet)".
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return human.Printable(l, false)
		}
	}
	return "(none yet)"
}
