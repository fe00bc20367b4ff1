package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/hgate/hgate/internal/human"
	"github.com/hgate/hgate/loop"
)

// LevelAgent is the agent level's name.
const LevelAgent = "agent"

// Agent starts the configured agent once (loop.RunPreflight): it must start, reach its
// model and end; an allowed file must be writable in its sandbox, by hgate's own write;
// Steps 0 and 1 then run on the scratch worktree. An agent that cannot start, reach its
// model or write is "cannot" (exit 2, its one line first); Steps 0-1 rejecting the write
// is a fail; Steps 0-1 that could not run (no prepare yet) a warning.
func Agent(ctx context.Context, opts loop.PreflightOptions) Result {
	res := Result{Level: LevelAgent, Status: OK}
	p, err := loop.RunPreflight(ctx, opts)
	if err != nil {
		return cannot(res, "%s", strings.TrimPrefix(oneLine(err.Error()), "hgate: "))
	}
	if msg := p.Problem(); msg != "" {
		res = cannot(res, "%s", msg)
		res.add("spent %s, %s", human.USD(p.SpendUSD), human.Tokens(p.Tokens))
		return res
	}
	if p.ReadOutput {
		res.add("%s started in its sandbox (%s), finished a model turn and ended: %q", p.Agent, p.Sandbox, oneLine(p.Message))
	} else {
		res.add("%s started in its sandbox (%s) and exited 0 (hgate does not read its output: that it reached a model is its own word)", p.Agent, p.Sandbox)
	}
	res.add("hgate appended a newline to %s inside the agent's sandbox: written", p.Wrote)
	gateLines(&res, p)
	res.add("spent %s, %s; nothing committed, the scratch worktree removed", human.USD(p.SpendUSD), human.Tokens(p.Tokens))
	return res
}

// gateLines reports Steps 0 and 1 on what was written.
func gateLines(res *Result, p *loop.Preflight) {
	a := p.Gate
	switch {
	case p.GateSkipped != "":
		res.add("%s", p.GateSkipped)
	case p.GateError != "":
		res.worsen(Warn)
		res.add("warning: Steps 0-1 did not run on it: %s", oneLine(p.GateError))
	case a == nil || a.Steps.Step0 == nil:
		res.worsen(Warn)
		res.add("warning: Steps 0-1 did not run on it")
	case !a.Steps.Step0.OK:
		res.worsen(Fail)
		res.add("Step 0 rejected it: %s", strings.Join(a.Reasons, "; "))
	case a.Steps.Step1 == nil || a.Steps.Step1.Skipped:
		res.add("Step 0 ok; Step 1 skipped (the regression suite is empty)")
	case !a.Steps.Step1.OK:
		res.worsen(Fail)
		res.add("Step 0 ok; Step 1 rejected it: %s", strings.Join(a.Reasons, "; "))
	default:
		s1 := a.Steps.Step1
		res.add("Step 0 ok; Step 1 ok (%d/%d suite tasks passed)", s1.Passed, s1.Total)
	}
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return fmt.Sprintf("%s …", s[:i])
	}
	return s
}
