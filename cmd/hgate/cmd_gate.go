package main

import (
	"context"

	"github.com/hgate/hgate/gate"
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
	rep, err := gate.Run(ctx, env, gate.Options{FailFast: c.FailFast, Rerun: c.Rerun})
	if err != nil {
		return err
	}
	if g.JSON {
		err = g.printJSON(rep)
	} else {
		rep.WriteText(g.stdout)
	}
	if err == nil && !rep.Passed() {
		return answerNo{}
	}
	return err
}

// Help is shown by "hgate gate --help" below the summary.
func (c *gateCmd) Help() string {
	return `Step 0 rejects any path changed outside allow (worktree, index, untracked files, commits
since the last gated commit) before a task runs. Step 1 runs the regression suite (train
tasks in suite.json) against its threshold; Step 2 runs the held-out test split, whose
val_score must not fall below the best in results.tsv (with gate.trials or gate.margin in
hgate.yaml: trials while undecided, compared task by task with the best's own trials). Both
run at once and both are printed. Step 3, after a pass, promotes the train tasks that failed
at the last gated commit (by the gate's record) and pass now into the suite.

Exit status: 0 keep the change (then git commit and hgate record), 1 rejected,
2 could not answer, 130 interrupted.`
}
