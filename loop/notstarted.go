package loop

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// NotStarted is hgate loop's refusal to start a run: every refusal has the one shape
// "loop: not started: <reason> (<file or key>): <what to run>", and hgate exits 2 with it
// (the loop could not answer; gate, guard and record keep exit 1 for "no").
type NotStarted struct {
	Reason string // what is wrong
	Where  string // the file, path or hgate.yaml key it is about
	Fix    string // what to run, or to change
}

func (e *NotStarted) Error() string {
	return fmt.Sprintf("loop: not started: %s (%s): %s", e.Reason, e.Where, e.Fix)
}

// advised is an error that names its own problems, what they are about, and their one fix
// (gate.ConfigChanged, gate.CarryChanged): its advice replaces the caller's, which is
// for the errors that carry none.
type advised interface {
	error
	Problems() []string
	About() string // the file or key they are about
	Fix() string
}

// refuseStart wraps an error that stops the run before it begins; an interruption stays
// one (exit 130), and a refusal already in shape is kept as it is.
func refuseStart(err error, where, fix string) error {
	var ns *NotStarted
	if err == nil || errors.Is(err, context.Canceled) || errors.As(err, &ns) {
		return err
	}
	if a := advised(nil); errors.As(err, &a) {
		var errs []error
		for _, p := range a.Problems() {
			errs = append(errs, &NotStarted{Reason: p, Where: a.About(), Fix: a.Fix()})
		}
		return errors.Join(errs...)
	}
	return RefusalLines(err.Error(), where, fix)
}

// RefusalLines is one refusal a line of msg: every problem found is named at once (each
// bad flag, each field of a journal), each in the refusals' one shape.
func RefusalLines(msg, where, fix string) error {
	var errs []error
	for line := range strings.Lines(msg) {
		if line = strings.TrimSpace(line); line != "" {
			errs = append(errs, &NotStarted{Reason: line, Where: where, Fix: fix})
		}
	}
	return errors.Join(errs...)
}

// userWorkFix is the advice for uncommitted changes in allowed files. After a run that
// stopped with the agent's work waiting for its gate (a budget or deadline stop), that
// work is the agent's: --resume gates it, and committing it would bypass the gate.
func (r *runner) userWorkFix() string {
	if id, err := lastRun(r.ws.Runs()); err == nil {
		path := filepath.Join(r.ws.Runs(), id, journalName)
		if data, err := readJournal(path); err == nil {
			if j, _, err := parseJournal(path, data); err == nil && (j.Phase != phaseNone || j.Gen != nil) {
				return fmt.Sprintf("hgate loop --resume (run %s stopped with the agent's work waiting for its gate; --resume gates it)", id)
			}
		}
	}
	return "gate them first (hgate gate, then git commit), or set them aside (git stash)"
}

// agentProgram refuses a new run whose agent has no program to run: its first iteration
// would find it out only after the run began (stopped as "did not start"), and the
// preflight, when on, later and slower. A relative path is the repository root's, where
// the agent runs.
func (r *runner) agentProgram() error {
	fix := "install it, or name another agent with loop.agent in " + r.env.Config.File + " or --agent"
	args, err := Command(r.cfg.Agent, "prompt")
	if err != nil || len(args) == 0 {
		return &NotStarted{Reason: "no agent is configured", Where: "loop.agent", Fix: fix}
	}
	prog := args[0]
	if strings.Contains(prog, "/") && !filepath.IsAbs(prog) {
		prog = filepath.Join(r.repo.Root(), prog)
	}
	if _, err := exec.LookPath(prog); err != nil {
		return &NotStarted{Reason: fmt.Sprintf("the agent's program %s cannot be run (%v)", args[0], err), Where: "loop.agent", Fix: fix}
	}
	return nil
}
