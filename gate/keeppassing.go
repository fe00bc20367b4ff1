package gate

import (
	"github.com/hgate/hgate/answer"

	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/config"
)

// gate.keep_passing: what passed stays passing. The suite starts empty and grows only by
// promotion (auto-harness's rule), so where most train tasks pass at baseline only the
// test split, as an aggregate, stands between them and a change that breaks one. With
// keep_passing on, Step 1 also runs the train tasks that passed at the gated commit and
// are not in the suite: one that fails, and fails again on two reruns (a flaky task
// passes one), rejects the change, named. The tasks that passed at the gated commit are
// the train tasks that passed at baseline: while the guard is on, every kept change left
// them passing (or its gate rejected it), and a task that failed at baseline and passes
// now joined the suite by promotion.

// keepRuns is how many times a guarded task must fail, its first run included, before it
// rejects the change (the answer's text says it).
const keepRuns = answer.KeepRuns

// keepPassing is gate.keep_passing as this workspace applies it: cfg's when written,
// else prepare's recorded decision; off for a workspace prepared before the key existed,
// until prepare --reset decides.
func keepPassing(cfg *config.Config, base *Baseline) bool {
	if kp := cfg.Gate.KeepPassing; kp != nil {
		return *kp
	}
	return base != nil && base.KeepPassing != nil && *base.KeepPassing
}

// readGuarded finds the train tasks Step 1 guards besides the suite (guarded).
func readGuarded(e *Env, in *inputs) error {
	base, err := store{e}.baseline()
	if err != nil || !keepPassing(e.Config, base) {
		return err
	}
	in.guarded = guarded(in.sp.Train, base.TrainFailing, in.st.suite.Tasks)
	return nil
}

// guarded is the train tasks that passed at baseline and are not in the suite, sorted.
func guarded(train, failing, suiteTasks []string) []string {
	var out []string
	for _, id := range train {
		if !slices.Contains(failing, id) && !slices.Contains(suiteTasks, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// guardPassing runs the guarded tasks once (traces kept with the suite's), and those that
// failed up to keepRuns-1 more times; the ones that failed every run are broken. Not run
// when --fail-fast already stopped the gate.
func (g *gateRun) guardPassing(ctx context.Context, r *ran) error {
	rm, in := g.rm, g.in
	if len(in.guarded) == 0 || r.stoppedEarly {
		return nil
	}
	failing, trial := in.guarded, 1
	if r.guard != nil { // the first run went beside Steps 1 and 2 (runGuarded)
		failing, trial = stillFailing(failing, r.guard), 2
	}
	for ; trial <= keepRuns && len(failing) > 0; trial++ {
		run, err := rm.Runner(r.pool, cleanroom.Train)
		if err != nil {
			return err
		}
		req := benchmark.Request{Split: "train", Tasks: failing, Trial: trial}
		if trial == 1 {
			req.TraceDir, req.Progress = g.traces(), g.progress("step 1, passing before", len(failing))
		}
		out, err := run.Run(ctx, req)
		if err != nil {
			return err
		}
		failing = stillFailing(failing, out)
	}
	in.broken = failing
	return nil
}

// stillFailing is the tasks of ids that did not pass in out.
func stillFailing(ids []string, out *benchmark.Outcome) []string {
	return slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return out.Results[id].Passed() })
}

// keepReason is Step 1's reason for broken tasks.
func keepReason(broken []string) string {
	return fmt.Sprintf("step 1: %d train task(s) that passed at the gated commit fail now, and on %d reruns: %s (gate.keep_passing)",
		len(broken), keepRuns-1, strings.Join(broken, ", "))
}
