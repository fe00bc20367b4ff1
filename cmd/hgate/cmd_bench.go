package main

import (
	"context"

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
	js := rep.JSON() // the text is rendered from it, as the MCP tool renders it
	js.WriteText(g.stdout)
	return nil
}
