// Package answer holds the answer types of hgate gate, bench and guard (their --json
// objects) and their text renderers: what the commands print and what the MCP tools
// render from the commands' --json, without importing the workflows that produce them.
package answer

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/internal/human"

	"github.com/hgate/hgate/gitguard"
)

// Answer is the gate's answer. Its JSON form is a contract (docs/design.md#gate-answer):
// fields may be added, never renamed. A step that did not run is null. The test split appears only as
// the aggregate fields of step2.
type Answer struct {
	Verdict  string   `json:"verdict"` // "pass", "reject", "pending" (Step 2 deferred to the loop), or "interrupted"
	Tree     string   `json:"tree"`    // the candidate tree: HEAD's tree with the allowed files as on disk
	Head     string   `json:"head"`
	ValScore *float64 `json:"val_score"`
	Best     *float64 `json:"best"`
	Steps    Steps    `json:"steps"`
	Reasons  []string `json:"reasons"` // one line per failed step
	// Spend is what the benchmark's agents spent on this gate's train runs (Steps 1 and
	// 3), where the benchmark reports it (Harbor); absent otherwise. hgate loop counts it,
	// and TestSpend, against loop.budget_usd and loop.budget_tokens.
	Spend *benchmark.Spend `json:"spend,omitempty"`
	// TestSpend is the test split's spend: never shown per gate (it would say how the
	// held-out tasks went), only added up over a run.
	TestSpend benchmark.Spend `json:"-"`
	// Interrupted names the step a SIGINT or SIGTERM cut short ("step 3"): the steps
	// shown finished, but nothing was recorded.
	Interrupted string `json:"interrupted,omitempty"`
}

// Steps holds one entry per gate step; nil when the step did not run.
type Steps struct {
	Step0 *Step0 `json:"step0"`
	Step1 *Step1 `json:"step1"`
	Step2 *Step2 `json:"step2"`
	Step3 *Step3 `json:"step3"`
}

// Step0 is the file guard.
type Step0 struct {
	OK         bool                 `json:"ok"`
	Skipped    bool                 `json:"skipped"` // file_guard: false
	Violations []gitguard.Violation `json:"violations"`
}

// Step1 is the regression suite on the train split.
type Step1 struct {
	OK        bool     `json:"ok"`
	Skipped   bool     `json:"skipped"` // the suite is empty
	Passed    int      `json:"passed"`
	Total     int      `json:"total"`
	Threshold float64  `json:"threshold"`
	Failed    []string `json:"failed"` // every suite task that failed, whether the step passed or not
	// LetThrough: the step passed with these suite tasks failing (under the threshold's
	// allowance); absent when none did or the step failed.
	LetThrough   []string `json:"let_through,omitempty"`
	StoppedEarly bool     `json:"stopped_early,omitempty"`
	Traces       string   `json:"traces,omitempty"` // where each suite task's trace is, <traces>/<id>.log
	// With gate.keep_passing: the train tasks outside the suite that passed at the gated
	// commit and were run again, and those that failed every run (which reject).
	Guarded int      `json:"guarded,omitempty"`
	Broken  []string `json:"broken,omitempty"`
}

// Step2 is the held-out test split, as an aggregate.
type Step2 struct {
	OK           bool     `json:"ok"`
	ValScore     float64  `json:"val_score"`
	Best         *float64 `json:"best"`
	Tasks        int      `json:"tasks"`
	Nulls        int      `json:"nulls"`
	StoppedEarly bool     `json:"stopped_early,omitempty"`
	Cached       bool     `json:"cached"`              // the tree's earlier score, not run again
	ScoredAt     string   `json:"scored_at,omitempty"` // with cached: when the test split ran for this tree
	// With gate.trials or gate.margin (see decide): trials run per test task, how many
	// test tasks gave different rewards across them, the difference from the best and
	// val_score's interval at the confidence (best + the difference's interval).
	Trials     int       `json:"trials,omitempty"`
	Flaky      *int      `json:"flaky,omitempty"` // 0 is shown: absent only without trials
	Confidence float64   `json:"confidence,omitempty"`
	Margin     float64   `json:"margin,omitempty"`
	Delta      *float64  `json:"delta,omitempty"`
	Interval   []float64 `json:"interval,omitempty"`
	NewBest    bool      `json:"new_best,omitempty"`   // a confident improvement, replicated: record moves refs/hgate/best
	Replicated bool      `json:"replicated,omitempty"` // a claimed new best was run again
	// Deferred: a pending gate's Step 2, left to the loop's own gate after the agent's
	// turn; its JSON is {"deferred": true} alone.
	Deferred bool `json:"deferred,omitempty"`
}

// MarshalJSON writes a deferred Step 2 as {"deferred": true}: it has no score to show.
func (s *Step2) MarshalJSON() ([]byte, error) {
	if s.Deferred {
		return []byte(`{"deferred":true}`), nil
	}
	type plain Step2
	return json.Marshal((*plain)(s))
}

// Step3 is the promotion of newly passing train tasks into the suite.
type Step3 struct {
	Ran      bool     `json:"ran"`
	Rerun    int      `json:"rerun"`
	Promoted []string `json:"promoted"`
	Flaky    []string `json:"flaky,omitempty"` // passed a trial and failed another: not promoted
	Failed   []string `json:"failed"`          // re-run and still failing (not passing in the first trial)
}

// Passed reports whether the gate kept the change.
func (r *Answer) Passed() bool { return r.Verdict == "pass" }

// Pending reports whether nothing rejected the change so far and Step 2 is the loop's.
func (r *Answer) Pending() bool { return r.Verdict == "pending" }

// IsInterrupted reports whether a signal cut the gate short: no verdict, nothing recorded.
func (r *Answer) IsInterrupted() bool { return r.Verdict == "interrupted" }

func percent(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }

const indent = "       "

// WriteText prints the report in auto-harness's line format.
func (r *Answer) WriteText(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	if s := r.Steps.Step0; s != nil {
		writeStep0(p, s)
	}
	if s := r.Steps.Step1; s != nil {
		writeStep1(p, s)
	}
	if s := r.Steps.Step2; s != nil {
		writeStep2(p, s)
	}
	if r.Steps.Step1 != nil && (r.Steps.Step1.StoppedEarly || r.Steps.Step2 != nil && r.Steps.Step2.StoppedEarly) {
		p(indent + "(--fail-fast: outstanding tasks stopped once the rejection was certain; a task not run counts as not passed)")
	}
	if r.Steps.Step2 != nil && (r.Steps.Step3 != nil || !r.IsInterrupted()) {
		r.writeStep3(p)
	}
	r.writeVerdict(p)
}

// printf prints one line of the text report.
type printf func(format string, a ...any)

// writeStep0 prints the file guard's lines: each violation with its revert hint.
func writeStep0(p printf, s *Step0) {
	p("[gate] Step 0: file guard")
	switch {
	case s.Skipped:
		p(indent + "disabled (file_guard: false)  SKIP")
	case s.OK:
		p(indent + "only allowed paths changed  PASS ✓")
	default:
		for _, v := range s.Violations {
			line := fmt.Sprintf("%s%-10s %s", indent, v.Kind, v.Path)
			if v.Detail != "" {
				line += "  (" + v.Detail + ")"
			}
			p("%s", human.Printable(line, false)) // a path may hold any byte but / and NUL
			if v.Hint != "" {
				p("%s           revert: %s", indent, human.Printable(v.Hint, false))
			}
		}
		p(indent+"%d path(s) changed outside allow  FAIL ✗", len(s.Violations))
	}
}

// writeStep1 prints the eval suite's lines.
func writeStep1(p printf, s *Step1) {
	p("[gate] Step 1: eval suite (%d tasks, threshold=%s)", s.Total, percent(s.Threshold))
	if s.Skipped {
		p(indent + "empty suite, skipped  PASS ✓")
	} else {
		line := fmt.Sprintf("%d/%d passed (%s)  %s", s.Passed, s.Total, percent(float64(s.Passed)/float64(s.Total)), mark(s.OK, s.StoppedEarly))
		if len(s.LetThrough) > 0 {
			line += " — let through: " + strings.Join(s.LetThrough, ", ")
		}
		p("%s", indent+line)
		if len(s.Failed) > 0 && !s.StoppedEarly {
			if len(s.LetThrough) == 0 {
				p(indent+"failed: %s", strings.Join(s.Failed, ", "))
			}
			if s.Traces != "" {
				p(indent+"traces: %s/<id>.log", s.Traces)
			}
		}
	}
	if len(s.Broken) > 0 {
		p(indent+"passed at the gated commit, failing now and on %d reruns: %s  FAIL ✗", KeepRuns-1, strings.Join(s.Broken, ", "))
	}
}

// writeStep2 prints the full benchmark's lines, or that the loop scores it later.
func writeStep2(p printf, s *Step2) {
	p("[gate] Step 2: full benchmark (test split)")
	if s.Deferred {
		p(indent + "deferred: the loop scores the held-out split after the agent's turn  PENDING")
		return
	}
	prev := "(no previous score)"
	if s.Best != nil {
		prev = fmt.Sprintf("(prev best: %.4f)", *s.Best)
	}
	nulls := ""
	if s.Nulls > 0 {
		nulls = fmt.Sprintf("  [%d of %d tasks null]", s.Nulls, s.Tasks)
	}
	p(indent+"val_score=%.4f  %s  %s%s", s.ValScore, mark(s.OK, s.StoppedEarly), prev, nulls)
	if s.Trials > 0 && s.Delta != nil {
		writeTrials(p, s)
	}
	if s.Cached {
		p(indent+"(this tree was scored at %s; the test split is not run twice — --rerun forces it)", s.ScoredAt)
	}
}

// writeTrials prints how sure a score of several trials per task is.
func writeTrials(p printf, s *Step2) {
	sure := fmt.Sprintf("%d trial(s) per task; difference %+.4f", s.Trials, *s.Delta)
	if s.Interval != nil {
		sure += fmt.Sprintf(", val_score in [%.4f, %.4f] at %.0f%%", s.Interval[0], s.Interval[1], 100*s.Confidence)
	}
	if s.Margin > 0 {
		sure += fmt.Sprintf(", margin %.4f", s.Margin)
	}
	p(indent+"(%s)", sure)
	if *s.Flaky > 0 {
		p(indent+"%d test task(s) flaky: their reward varied across trials", *s.Flaky)
	}
	switch {
	case s.NewBest:
		p(indent + "a confident improvement, replicated: a new best")
	case s.Replicated:
		p(indent + "a claimed improvement did not replicate: kept, but the best stays")
	}
}

// writeStep3 prints the suite promotion's lines (a pending gate only says what would be
// promoted).
func (r *Answer) writeStep3(p printf) {
	p("[gate] Step 3: suite promotion")
	switch s := r.Steps.Step3; {
	case s == nil:
		p(indent + "skipped (steps 1 and 2 must both pass)")
	case s.Rerun == 0:
		p(indent + "no previously-failing train tasks to re-run")
	default:
		p(indent+"re-running %d previously-failing train tasks", s.Rerun)
		switch {
		case len(s.Promoted) == 0:
			p(indent + "no task passes now; suite unchanged")
		case r.Pending():
			p(indent+"%d task(s) pass now: %s (the loop's own gate promotes them when it keeps this tree)", len(s.Promoted), pyList(s.Promoted))
		default:
			p(indent+"promoted %d task(s) into regression suite: %s", len(s.Promoted), pyList(s.Promoted))
		}
		if len(s.Failed) > 0 {
			p(indent+"still failing: %s", strings.Join(s.Failed, ", "))
		}
		if len(s.Flaky) > 0 {
			p(indent+"flaky, not promoted (passed a trial, failed another): %s", strings.Join(s.Flaky, ", "))
		}
	}
}

// writeVerdict prints the last line: interrupted, passed, pending or rejected with why.
func (r *Answer) writeVerdict(p printf) {
	switch {
	case r.IsInterrupted():
		p("[gate] INTERRUPTED  during %s: the steps above finished, but nothing was recorded (no receipt, no promotion; state files as they were)", r.Interrupted)
	case r.Passed():
		p("[gate] PASSED ✓  All steps clear. (val_score=%.4f)", *r.ValScore)
	case r.Pending():
		p("[gate] PENDING …  Steps 0 and 1 clear. The held-out test split is scored by the loop after the agent's turn; its verdict comes in the next prompt.")
	default:
		p("[gate] REJECTED ✗  %d step(s) failed:", len(r.Reasons))
		for _, reason := range r.Reasons {
			p(indent+"- %s", reason)
		}
	}
}

func mark(ok, stopped bool) string {
	switch {
	case stopped:
		return "STOPPED (not finished: the verdict was already certain)"
	case ok:
		return "PASS ✓"
	}
	return "FAIL ✗"
}

// pyList formats ids as Python prints a list of strings, as auto-harness does.
func pyList(ids []string) string {
	q := make([]string, len(ids))
	for i, id := range ids {
		q[i] = "'" + id + "'"
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// KeepRuns is how many times a task that passed at the gated commit must fail, its first
// run included, before Step 1 rejects the change for it (gate.keep_passing).
const KeepRuns = 3
