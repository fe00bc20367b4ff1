// Package check proves a set-up before a night is spent on it (hgate check): the
// configuration loads, the benchmark runs, and what allow covers can change a reward.
// Each level answers ok, warn, fail or cannot; the command's exit code is the worst.
package check

import (
	"fmt"
	"io"
)

// Status is one level's answer.
type Status string

const (
	OK     Status = "ok"     // the level holds
	Warn   Status = "warn"   // it holds, with something the user should look at
	Fail   Status = "fail"   // the level says no: the set-up is wrong
	Cannot Status = "cannot" // the level could not be checked
)

// Level names, in the order they run.
const (
	LevelConfig    = "config"
	LevelBenchmark = "benchmark"
)

// Levels are the levels hgate check knows, in the order they run.
var Levels = []string{LevelConfig, LevelBenchmark, LevelAgent}

// Result is what one level found.
type Result struct {
	Level  string   `json:"level"`
	Status Status   `json:"status"`
	Lines  []string `json:"lines"` // what it found and tried, one item a line
}

func (r *Result) add(format string, args ...any) {
	r.Lines = append(r.Lines, fmt.Sprintf(format, args...))
}

// worsen moves r's status to s when s is worse.
func (r *Result) worsen(s Status) {
	if rank(s) > rank(r.Status) {
		r.Status = s
	}
}

func rank(s Status) int {
	switch s {
	case Warn:
		return 1
	case Fail:
		return 2
	case Cannot:
		return 3
	}
	return 0
}

// Report is every level's result.
type Report struct {
	Checks []Result `json:"checks"`
	Exit   int      `json:"exit"`
}

// Add appends a level's result and updates the exit code.
func (r *Report) Add(res Result) {
	r.Checks = append(r.Checks, res)
	r.Exit = max(r.Exit, ExitCode(res.Status))
}

// FirstCannot is the first line of the first level that could not be checked.
func (r *Report) FirstCannot() string {
	for _, c := range r.Checks {
		if c.Status == Cannot && len(c.Lines) > 0 {
			return c.Level + ": " + c.Lines[0]
		}
	}
	return "a level could not be checked"
}

// ExitCode is hgate's exit code for a status: 0 ok or warn, 1 fail, 2 cannot.
func ExitCode(s Status) int {
	switch s {
	case Fail:
		return 1
	case Cannot:
		return 2
	}
	return 0
}

// WriteText prints the report for a person: one heading line a level, its findings
// indented below.
func (r *Report) WriteText(w io.Writer) {
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%-9s %s\n", c.Level, c.Status)
		for _, l := range c.Lines {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
}
