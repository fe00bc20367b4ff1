package main

import (
	"context"
	"fmt"
	"unicode/utf8"

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
	width := idWidth(rep.Tasks)
	for _, id := range rep.Tasks {
		r := rep.Results[id]
		fmt.Fprintln(g.stdout, benchLine(id, width, r.Passed(), r.Reward, r.Reason))
	}
	fmt.Fprintf(g.stdout, "%d/%d train tasks passed\n", rep.Passed, len(rep.Tasks))
	return nil
}

// idWidth is the width of the id column: the longest id, so that no id
// pushes its score out of line.
func idWidth(ids []string) int {
	w := 0
	for _, id := range ids {
		w = max(w, utf8.RuneCountInString(id))
	}
	return w
}

// benchLine is one task's line of hgate bench and its MCP tool; width is the
// id column's (idWidth).
func benchLine(id string, width int, passed bool, reward *float64, reason string) string {
	status, score := "FAIL", "null"
	if passed {
		status = "PASS"
	}
	if reward != nil {
		score = fmt.Sprintf("%.2f", *reward)
	}
	line := fmt.Sprintf("%s  %-*s  %s", status, width, id, score)
	if reason != "" {
		line += "  (" + reason + ")"
	}
	return line
}
