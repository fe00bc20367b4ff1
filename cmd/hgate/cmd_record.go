package main

import (
	"context"
	"fmt"

	"github.com/hgate/hgate/gate"
)

type recordCmd struct {
	ValScore    *float64 `name:"val-score" placeholder:"X" help:"Accepted for auto-harness compatibility: must match the gate's receipt."`
	EvalsPassed *int     `name:"evals-passed" placeholder:"N" help:"Accepted for auto-harness compatibility: must match the gate's receipt."`
	EvalsTotal  *int     `name:"evals-total" placeholder:"N" help:"Accepted for auto-harness compatibility: must match the gate's receipt."`
}

func (c *recordCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "record")
	if err != nil {
		return err
	}
	defer release()
	rep, err := gate.RecordRow(env, gate.RecordOptions{ValScore: c.ValScore, EvalsPassed: c.EvalsPassed, EvalsTotal: c.EvalsTotal})
	if err != nil {
		return err
	}
	r := rep.Row
	if g.JSON {
		return g.printJSON(rep.JSON())
	}
	if rep.Already {
		fmt.Fprintf(g.stdout, "commit %s is already recorded as iteration %d; nothing appended\n", r.Commit, r.Iteration)
		if rep.Uncommitted != "" {
			fmt.Fprintf(g.stderr, "hgate: the worktree holds a change the gate passed (tree %s) that is not committed: git commit it, then run hgate record\n", rep.Uncommitted[:7])
		}
		return nil
	}
	best := ""
	if rep.NewBest {
		best = "  (new best)"
	}
	fmt.Fprintf(g.stdout, "recorded iteration %d: commit %s val_score=%.4f evals %d/%d%s\n",
		r.Iteration, r.Commit, r.ValScore, r.EvalsPassed, r.EvalsTotal, best)
	return nil
}
