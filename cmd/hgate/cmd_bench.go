package main

import (
	"context"
	"fmt"

	"github.com/hgate/hgate/gate"
)

type benchCmd struct {
	Tasks []string `name:"tasks" placeholder:"ID" help:"Run only these train tasks (repeat the flag or separate with commas); default: every train task."`
}

func (c *benchCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "bench")
	if err != nil {
		return err
	}
	defer release()
	rep, err := gate.Bench(ctx, env, c.Tasks)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.printJSON(rep.JSON())
	}
	width := gate.IDWidth(rep.Tasks)
	for _, id := range rep.Tasks {
		r := rep.Results[id]
		fmt.Fprintln(g.stdout, gate.BenchLine(id, width, r.Passed(), r.Reward, r.Reason))
	}
	fmt.Fprintf(g.stdout, "%d/%d train tasks passed\n", rep.Passed, len(rep.Tasks))
	return nil
}
