package loop

import (
	"testing"
	"time"

	"github.com/hgate/hgate/config"
)

// TestLimitStop: the run's limits, in their order (iterations, patience, budget,
// deadline), each read from the settings and the journal; none fires while all hold.
func TestLimitStop(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	two := []Iteration{{Iteration: 1}, {Iteration: 2}}
	over := func() string { return "$1.00 spent of the $1.00 budget" }
	under := func() string { return "" }
	for _, c := range []struct {
		name   string
		cfg    config.Loop
		j      journal
		budget func() string
		dead   time.Time
		want   StopReason
	}{
		{name: "none", cfg: config.Loop{Iterations: 3, Patience: 3}, j: journal{Iterations: two, SinceBest: 2}, budget: under, dead: now.Add(time.Minute), want: StopNone},
		{name: "iterations before budget", cfg: config.Loop{Iterations: 2}, j: journal{Iterations: two}, budget: over, want: StopIterations},
		{name: "patience", cfg: config.Loop{Patience: 2}, j: journal{Iterations: two, SinceBest: 2}, budget: under, want: StopPatience},
		{name: "budget before deadline", budget: over, dead: now, want: StopBudget},
		{name: "deadline reached", budget: under, dead: now, want: StopDeadline},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, detail := limitStop(c.cfg, &c.j, c.budget, c.dead, func() time.Time { return now })
			if got != c.want || (got == StopNone) != (detail == "") {
				t.Errorf("limitStop = %q, %q; want %q (a detail exactly when it stops)", got, detail, c.want)
			}
		})
	}
}
