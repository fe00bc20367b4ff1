package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/lock"
)

type finalCmd struct {
	Last bool `help:"Show the last final score without scoring again (the showing is still counted)."`
}

func (c *finalCmd) Help() string {
	return `Scores the best (refs/hgate/best) on the sealed final split, which no gate, agent or hgate bench ever scores, with the trials prepare chose, and prints the final gain over the baseline with its 95% interval beside the gain the gate saw on the test split, and the gap between them: how much the best fitted the test split by being chosen on it. A loop run does the same when it ends.

Every scoring and every showing is counted (hgate status and the report show the counts): each look you act on makes the final split less final. The scores are kept in the repository's held-out folder, which no agent's sandbox can read. A workspace prepared with fewer than 30 final tasks, or before final splits existed, has none: hgate prepare --reset makes one.`
}

func (c *finalCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "final")
	if err != nil {
		return err
	}
	defer release()
	var fs *gate.FinalScore
	if c.Last {
		fs, err = gate.ShowFinal(env.Repo, env.Config.WorkspaceDir(), "hgate final --last", true)
		if err == nil && fs == nil {
			err = errors.New("the final split was never scored: run hgate final")
		}
	} else {
		fs, err = env.ScoreFinal(ctx, "hgate final")
		if err == nil {
			fs, err = gate.ShowFinal(env.Repo, env.Config.WorkspaceDir(), "hgate final", true)
		}
	}
	if errors.Is(err, gate.ErrBestIsBaseline) && !g.JSON {
		fmt.Fprintln(g.stdout, err)
		return nil
	}
	if errors.Is(err, gate.ErrNoFinal) {
		if why, werr := gate.NoFinalReason(env.Config, env.Repo); werr == nil && why != "" {
			err = fmt.Errorf("this workspace has no final split: %s", why)
		}
	}
	if err != nil {
		return err
	}
	if g.JSON {
		return g.printJSON(fs)
	}
	writeFinal(g.stdout, fs)
	return nil
}

// writeFinal prints a final score as hgate final and the loop's end show it.
func writeFinal(w io.Writer, fs *gate.FinalScore) {
	for _, l := range fs.Lines() {
		fmt.Fprintln(w, l)
	}
}

// lockToShow is for the read-only commands that show a final score (status, report): they
// count the showing in the ledger, which needs the repository lock, but must not wait
// hours for a loop that holds it. It takes the lock only when there is a score to show,
// and never waits: ok false (and no error) when another hgate holds it, or it cannot be
// taken here; the showing then waits in the held-out folder (gate.ShowFinal).
func (g *Globals) lockToShow(ctx context.Context, repo *gitguard.Repo, command string) (release func(), ok bool, err error) {
	scores, err := gate.FinalScores(repo)
	if err != nil || len(scores) == 0 {
		return func() {}, false, err
	}
	l, err := lock.Acquire(ctx, filepath.Join(repo.CommonDir(), "hgate.lock"), lock.Options{Command: command})
	if err != nil {
		return func() {}, false, nil
	}
	repo.BreakRefLocks(gitguard.LedgerRef, gitguard.GatedRef, gitguard.BestRef)
	return func() { l.Release() }, true, nil
}
