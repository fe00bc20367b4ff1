package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/harness/qualify"
)

type qualifyCmd struct{}

func (c *qualifyCmd) Help() string {
	return `Checks the tools the agent built for itself in loop.harness.dir (default .hgate/harness): skills/<name>/SKILL.md (front matter name and description, and only the fields Claude Code documents) and MCP servers mcp/<name>/mcp.json (or HarnessGym's server.json, harnessgym-mcp.json). Each MCP server must open (MCP 2026-07-28's server/discover, or the legacy initialize) and answer tools/list within its startup and tool timeouts, list at least one tool, and pass its self_test. Every command runs in a clean room of the gated commit's tree plus the harness folder, in the benchmark's sandbox. The report goes to workspace/qualification/latest/qualification.json, each check's output beside it. Exit 0 when every artifact passes (or there is none), 1 when one fails, 2 when hgate could not answer.`
}

func (c *qualifyCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "qualify")
	if err != nil {
		return err
	}
	defer release()
	q, err := qualify.Run(ctx, env, qualify.Options{ReportDir: qualify.ReportDir(env)})
	if err != nil {
		return err
	}
	if g.JSON {
		if err := g.printJSON(q); err != nil {
			return err
		}
	} else {
		writeQualification(g.stdout, q)
	}
	if q.Failed > 0 {
		return answerNo{}
	}
	return nil
}

// writeQualification prints one line an artifact, one more a failed check.
func writeQualification(w io.Writer, q *qualify.Qualification) {
	if len(q.Artifacts) == 0 {
		fmt.Fprintf(w, "nothing to qualify in %s\n", q.Dir)
		return
	}
	for _, a := range q.Artifacts {
		mark := "PASS"
		if a.Status != "passed" {
			mark = "FAIL"
		}
		line := fmt.Sprintf("%s  %s %s (%s)", mark, a.Kind, a.Name, a.Path)
		if len(a.Tools) > 0 {
			line += ": tools " + strings.Join(a.Tools, ", ")
		}
		fmt.Fprintln(w, line)
		for _, ch := range a.Checks {
			if ch.Status != "passed" {
				fmt.Fprintf(w, "      %s %s: %s\n", ch.Name, ch.Status, ch.Message)
			}
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed; report: %s\n", q.Passed, q.Failed, q.Report)
}
