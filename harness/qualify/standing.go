package qualify

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/hgate/hgate/harness"
)

// stand gives each artifact its standing. What failed is quarantined for its own failure.
// HarnessGym's rule: when the last qualification of an iteration (opts.Final) fails, the
// artifacts built or changed in that iteration are quarantined with the failing ones —
// each told which, and why; what was judged before the iteration and is unchanged since
// (opts.Prior) stands on its own checks.
func stand(q *Qualification, opts Options) {
	var failed []string
	var why []string
	for _, a := range q.Artifacts {
		if a.Status != "passed" {
			failed = append(failed, a.Kind+" "+a.Name)
			why = append(why, a.Kind+" "+a.Name+": "+a.failure())
		}
	}
	for i := range q.Artifacts {
		a := &q.Artifacts[i]
		switch {
		case a.Status != "passed":
			a.Standing, a.Reason = harness.Quarantined, a.failure()
		case opts.Final && len(failed) > 0 && opts.Prior[a.Path] != a.Content:
			a.Standing = harness.Quarantined
			a.Reason = fmt.Sprintf("quarantined with %s, built in the same iteration (%d), which failed: %s",
				strings.Join(failed, ", "), opts.Iteration, strings.Join(why, "; "))
		default:
			a.Standing = harness.Qualified
		}
	}
}

// Lines says, one line an artifact, what a qualification decided: each quarantined
// artifact with its reason, each qualified one as such.
func Lines(q *Qualification) []string {
	var out []string
	for _, a := range q.Artifacts {
		line := a.Kind + " " + a.Name + ": " + a.Standing
		if a.Reason != "" {
			line += ": " + a.Reason
		}
		out = append(out, line)
	}
	return out
}

// readEarlier reads this iteration's previous report (hgate's own file, in the run's
// folder); nil when there is none or it does not read.
func readEarlier(path string) *Qualification {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var q Qualification
	if json.Unmarshal(data, &q) != nil {
		return nil
	}
	return &q
}

// notAgain is an artifact's verdict carried from this iteration's earlier qualification,
// when a check of it timed out there and its content is unchanged: running it again
// would only wait for the same timeout.
func notAgain(earlier *Qualification, path, content string) (QualifiedArtifact, bool) {
	if earlier == nil {
		return QualifiedArtifact{}, false
	}
	for _, a := range earlier.Artifacts {
		if a.Path != path || a.Content != content || a.Content == "" {
			continue
		}
		for i, c := range a.Checks {
			if c.Status == "timeout" {
				a.Checks[i].Seconds = 0
				a.Checks[i].Message = "not run again: unchanged since it timed out in this iteration's previous qualification (" + c.Message + ")"
				a.Standing, a.Reason = "", ""
				return a, true
			}
		}
	}
	return QualifiedArtifact{}, false
}
