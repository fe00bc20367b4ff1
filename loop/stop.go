package loop

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hgate/hgate/config"
)

// shouldStop checks the stop conditions between iterations: what the agent's last
// iteration came to first, then the run's limits (limitStop).
func (r *runner) shouldStop(ctx context.Context) (StopReason, string) {
	c := r.cfg
	best, _ := r.best()
	switch {
	case ctx.Err() != nil:
		return StopInterrupted, "SIGINT or SIGTERM"
	case c.StopScore != nil && best != nil && *best >= *c.StopScore:
		return StopScore, fmt.Sprintf("best val_score %.4f reached stop_score %.4f", *best, *c.StopScore)
	// A failed run says so (exit non-zero) even on its last iteration: crashes first.
	case r.budgetCut() != "":
		return StopBudget, r.budgetCut()
	case r.notStarted() != "":
		return StopCrashes, "the agent did not start"
	case c.MaxConsecutiveCrashes > 0 && r.j.Crashes >= c.MaxConsecutiveCrashes:
		return StopCrashes, fmt.Sprintf("the agent crashed %d time(s) in a row", r.j.Crashes)
	}
	return limitStop(c, r.j, r.book().overBudget, r.dead, r.now)
}

// limitStop checks the run's limits in c against journal j: its iterations, its
// patience, its budget (overBudget) and its deadline dead (zero: none) at now.
func limitStop(c config.Loop, j *journal, overBudget func() string, dead time.Time, now func() time.Time) (StopReason, string) {
	done := len(j.Iterations)
	switch {
	case c.Iterations > 0 && done >= c.Iterations:
		return StopIterations, fmt.Sprintf("%d iteration(s) done", done)
	case c.Patience > 0 && j.SinceBest >= c.Patience:
		return StopPatience, fmt.Sprintf("%d iteration(s) without a new best", j.SinceBest)
	case overBudget() != "":
		return StopBudget, overBudget()
	case !dead.IsZero() && !now().Before(dead):
		return StopDeadline, "deadline " + dead.Local().Format("2006-01-02 15:04")
	}
	return StopNone, ""
}

// budgetCut is the last iteration's BudgetCut with its outcome, or "": the gateway
// refused the agent's model request on the budget, so nothing more starts. A resume with
// a larger budget goes on: the gateway's count no longer reaches it.
func (r *runner) budgetCut() string {
	if len(r.j.Iterations) == 0 || r.book().budget.Reached(r.mg.total().Spend()) == "" {
		return ""
	}
	last := r.j.Iterations[len(r.j.Iterations)-1]
	if last.BudgetCut == "" {
		return ""
	}
	if last.Outcome != OutcomeSetAside { // a harness phase's agent: the attempt was judged before
		return fmt.Sprintf("%s in iteration %d: hgate loop --resume with a larger budget goes on", last.BudgetCut, last.Iteration)
	}
	if last.AttemptRef == "" { // a generation's agent that left nothing
		return fmt.Sprintf("%s; iteration %d's agent left nothing, set aside: hgate loop --resume with a larger budget goes on", last.BudgetCut, last.Iteration)
	}
	return fmt.Sprintf("%s; iteration %d's attempt was set aside in %s, not gated: hgate loop --resume with a larger budget goes on", last.BudgetCut, last.Iteration, last.AttemptRef)
}

// notStarted returns why the last iteration's agent could not even be started (its
// program not found, the sandbox refused), or "": trying again cannot help.
func (r *runner) notStarted() string {
	if r.j.Crashes == 0 || len(r.j.Iterations) == 0 {
		return ""
	}
	last := r.j.Iterations[len(r.j.Iterations)-1]
	why, ok := strings.CutPrefix(last.AgentDetail, notStarted)
	if !ok || last.BudgetCut != "" { // its first model request was refused on the budget
		return ""
	}
	return why
}

// crashError is the error of a run stopped by consecutive agent crashes: the last
// attempt's outcome and the tail of its stderr, which is where an agent says why.
func (r *runner) crashError() error {
	if why := r.notStarted(); why != "" {
		return fmt.Errorf("loop: the agent did not start (%s): check loop.agent in hgate.yaml or --agent", why)
	}
	last := r.j.Iterations[len(r.j.Iterations)-1]
	path := filepath.Join(repairDir(r.iterDir(last.Iteration), last.Repairs), "agent.stderr")
	msg := fmt.Sprintf("loop: the agent failed %d time(s) in a row (last: %s %s); its stderr (%s) ends:", r.j.Crashes, last.Agent, last.AgentDetail, path)
	t := strings.TrimRight(tail(path, 2000), "\n")
	if t == "" {
		t = "(nothing)"
	}
	var lines []string
	for _, l := range strings.Split(t, "\n") {
		lines = append(lines, "  "+l)
	}
	if n := len(lines); n > 10 {
		lines = lines[n-10:]
	}
	return fmt.Errorf("%s\n%s", msg, strings.Join(lines, "\n"))
}
