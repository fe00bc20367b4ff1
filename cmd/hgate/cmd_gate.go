package main

import (
	"context"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/loop"
)

type gateCmd struct {
	FailFast bool `help:"Stop outstanding tasks as soon as a rejection is certain."`
	Rerun    bool `help:"Run the test split even when this candidate tree was scored before (otherwise its earlier score is reused; with gate.trials the new trials pool with the earlier ones)."`
}

func (c *gateCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "gate")
	if err != nil {
		return err
	}
	defer release()
	// A gate the loop serves its agent runs while the agent's processes are alive: Step 2
	// is the loop's, after the agent's turn.
	rep, err := gate.Run(ctx, env, gate.Options{FailFast: c.FailFast, Rerun: c.Rerun, Pending: g.served})
	if rep != nil && g.served && env.Config.Loop.Train() == config.TrainNone {
		loop.HideTrain(rep) // loop.train_visibility: none, for the agent's own gate
	}
	if err != nil {
		if rep != nil && rep.IsInterrupted() {
			// The steps it finished, marked as not recorded; exit 130 all the same.
			printGate(g, rep)
		}
		return err
	}
	err = printGate(g, rep)
	if err == nil && !rep.Passed() && !rep.Pending() {
		return answerNo{}
	}
	return err
}

// printGate prints the gate's report, as JSON with --json.
func printGate(g *Globals, rep *gate.Answer) error {
	if g.JSON {
		return g.printJSON(rep)
	}
	rep.WriteText(g.stdout)
	return nil
}

// Help is shown by "hgate gate --help" below the summary.
func (c *gateCmd) Help() string {
	return `Step 0 rejects any path changed outside allow (worktree, index, untracked files, commits
since the last gated commit) before a task runs. Step 1 runs the regression suite (train
tasks in suite.json) against its threshold; Step 2 runs the held-out test split, whose
val_score must not fall below the best nor the gated commit's (with trials — gate.trials:
auto chooses them at prepare for a benchmark whose rewards varied, or hgate.yaml sets them —
trials while undecided, compared task by task with the best's own trials). Both
run at once and both are printed. Step 3, after a pass, promotes the train tasks that failed
at the last gated commit (by the gate's record) and pass now into the suite.

Inside hgate loop (through its socket) the agent's processes are alive, so Step 2 is left
to the loop's own gate after the agent's turn: the answer is pending, exit 0, when Steps 0
and 1 pass, and no state file is written.

Exit status: 0 keep the change (then git commit and hgate record), or pending inside the
loop; 1 rejected, 2 could not answer, 130 interrupted (the steps that finished are printed,
marked as not recorded).`
}
