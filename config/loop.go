package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hgate/hgate/internal/lazyre"
)

// The ranges of the loop's settings. hgate.yaml's loop keys (loopFields) and hgate loop's
// flags (Loop.Override) are both checked by these, so they say the same.
var (
	iterationsRange     = atLeast(0, "20", "0 for no limit")
	patienceRange       = atLeast(0, "5", "0 for no limit")
	repairAttemptsRange = atLeast(0, "1", "0 for none")
	agentsRange         = atLeast(1, "3", "at least 1")
	crashesRange        = atLeast(1, "3", "at least 1")
	// artifactRepairsRange bounds loop.harness.artifact_repairs.
	artifactRepairsRange = atLeast(0, "1", "0 for none")
)

func atLeast(min int, example, meaning string) func(int) string {
	return func(n int) string {
		return problemIf(n < min, fmt.Sprintf("is less than %d (expected e.g. %s; %s)", min, example, meaning))
	}
}

func budgetUSDRange(f float64) string {
	return problemIf(f < 0, "is negative (expected dollars such as 50, or 0 for no limit)")
}

func budgetTokensRange(n int) string {
	return problemIf(n < 0, "is negative (expected tokens such as 20000000, or 0 for no limit)")
}

func priceRange(f float64) string {
	return problemIf(f < 0, "is negative (expected dollars per million tokens, e.g. 1.25)")
}

func attemptTimeoutRange(t time.Duration) string {
	return problemIf(t <= 0, "is not positive (expected e.g. 30m)")
}

func forRange(t time.Duration) string {
	return problemIf(t < 0, "is negative (expected e.g. 8h, or 0 for no limit)")
}

func stopScoreRange(f float64) string {
	return problemIf(f < 0 || f > 1, "is outside 0..1 (expected a val_score such as 0.95)")
}

const notClock = `is not a time of day (expected HH:MM on a 24-hour clock, e.g. "07:00")`

var clockRE = lazyre.New(`^([01]?[0-9]|2[0-3]):([0-5][0-9])$`)

// ParseClock reads a time of day on a 24-hour clock, "H:MM" or "HH:MM", as loop.until and
// hgate loop --until take it; ok is false for anything else.
func ParseClock(s string) (hour, minute int, ok bool) {
	m := clockRE.Get().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, 0, false
	}
	hour, _ = strconv.Atoi(m[1])
	minute, _ = strconv.Atoi(m[2])
	return hour, minute, true
}

// clockTime checks a time of day (ParseClock) and returns it as "HH:MM".
func clockTime(s string) (string, bool) {
	h, m, ok := ParseClock(s)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%02d:%02d", h, m), true
}

// LoopFlags are hgate loop's settings from its command line; nil leaves hgate.yaml's.
type LoopFlags struct {
	Agent          *string
	Iterations     *int
	Patience       *int
	RepairAttempts *int
	Agents         *int
	StopScore      *float64
	Until          *string // "" clears loop.until
	For            *time.Duration
	AttemptTimeout *time.Duration
	BudgetUSD      *float64
	BudgetTokens   *int
	Harness        *bool // --harness: the reflect, build and qualify phases
}

// Override sets the flags given over l's settings, each checked as its hgate.yaml key is.
// The error has one line per bad flag: "--FLAG: VALUE PROBLEM".
func (l *Loop) Override(f LoopFlags) error {
	var bad []error
	check := func(flag, shown, problem string) bool {
		if problem != "" {
			bad = append(bad, fmt.Errorf("--%s: %s %s", flag, shown, problem))
		}
		return problem == ""
	}
	if f.Agent != nil {
		l.Agent = []string{*f.Agent}
	}
	for _, c := range []struct {
		flag  string
		value *int
		dst   *int
		rng   func(int) string
	}{
		{"iterations", f.Iterations, &l.Iterations, iterationsRange},
		{"patience", f.Patience, &l.Patience, patienceRange},
		{"repair-attempts", f.RepairAttempts, &l.RepairAttempts, repairAttemptsRange},
		{"agents", f.Agents, &l.Agents, agentsRange},
	} {
		if c.value != nil && check(c.flag, strconv.Itoa(*c.value), c.rng(*c.value)) {
			*c.dst = *c.value
		}
	}
	if v := f.BudgetUSD; v != nil && check("budget-usd", strconv.FormatFloat(*v, 'g', -1, 64), budgetUSDRange(*v)) {
		l.BudgetUSD = *v
	}
	if v := f.BudgetTokens; v != nil && check("budget-tokens", strconv.Itoa(*v), budgetTokensRange(*v)) {
		l.BudgetTokens = *v
	}
	if v := f.StopScore; v != nil && check("stop-score", strconv.FormatFloat(*v, 'g', -1, 64), stopScoreRange(*v)) {
		l.StopScore = v
	}
	if v := f.Until; v != nil {
		hm, ok := clockTime(*v)
		if ok || *v == "" {
			l.Until = hm
		} else {
			check("until", strconv.Quote(*v), notClock)
		}
	}
	if v := f.For; v != nil && check("for", v.String(), forRange(*v)) {
		l.For = *v
	}
	if f.Harness != nil {
		l.Harness.Enabled = *f.Harness
	}
	if v := f.AttemptTimeout; v != nil && check("attempt-timeout", v.String(), attemptTimeoutRange(*v)) {
		l.AttemptTimeout = *v
	}
	return errors.Join(bad...)
}
