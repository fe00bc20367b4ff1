package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/check"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/workspace"
)

type prepareCmd struct {
	Reset bool `help:"Start over on purpose: end the recorded state (kept in hgate state log), remove the state files and traces, clear refs/hgate/best, gate HEAD and prepare as new."`
	// ZeroBaselineOK: the flag's name is gate.ZeroBaselineFlag, which the refusal names.
	ZeroBaselineOK bool `name:"zero-baseline-ok" help:"Accept a baseline where every task failed the same way without printing a reward (same exit status, same last line of output), which prepare otherwise refuses as a benchmark that never ran."`
}

func (c *prepareCmd) Help() string {
	return `Runs the baseline on every task, writes the train/test split, results.tsv row 0 and learnings.md, and marks HEAD gated (refs/hgate/gated) when nothing was gated yet. A workspace already prepared is left alone.

With --reset, starts over on purpose — after removing the workspace, or to take a new benchmark or split: one ledger entry, "manual reset: ...", ends the old state (its history stays in hgate state log, as this entry's parent); the state files (suite.json, results.tsv, train_results.json, split.json, baseline.json, receipts) and the traces of the old split (traces/baseline, traces/latest, traces/refused) are removed; refs/hgate/best is cleared and HEAD gated; hgate.yaml is read from HEAD; then prepare runs as new. learnings.md and runs/ are kept. It takes the repository lock, and cannot be run by the agent inside the loop's sandbox.`
}

func (c *prepareCmd) adoptsHead() bool { return c.Reset }

func (c *prepareCmd) Run(ctx context.Context, g *Globals, env *gate.Env) error {
	release, err := g.lock(ctx, env.Repo, "prepare")
	if err != nil {
		return err
	}
	defer release()
	var rs *gate.ResetReport
	var rep *gate.PrepareReport
	if c.Reset {
		// The new baseline is HEAD: its hgate.yaml, not the old gated commit's, is the one
		// prepared with. Read it before anything is removed.
		if err := configAtHead(g, env); err != nil {
			return err
		}
		rs, rep, err = gate.PrepareReset(ctx, env, c.options())
		if rs != nil && !g.JSON {
			printReset(g, rs)
		}
	} else {
		rep, err = gate.Prepare(ctx, env, c.options())
	}
	if err != nil {
		return err
	}
	if len(rep.Created) > 0 {
		warnScorers(g, env)
	}
	if g.JSON {
		return g.printJSON(rep.JSON(rs))
	}
	w := g.stdout
	if len(rep.Created) == 0 {
		fmt.Fprintf(w, "workspace already prepared (%d train / %d test tasks, baseline val_score=%.4f); nothing changed\n",
			len(rep.Train), len(rep.Test), rep.ValScore)
		return nil
	}
	if rep.Tasks > 0 {
		fmt.Fprintf(w, "baseline: %d/%d tasks passed\n", rep.Passed, rep.Tasks)
	}
	fmt.Fprintf(w, "split: %d train / %d test tasks\n", len(rep.Train), len(rep.Test))
	if rep.Final > 0 {
		fmt.Fprintf(w, "final: %d tasks sealed (scored only at the end of a loop run and by hgate final)\n", rep.Final)
	}
	if len(rep.Excluded) > 0 {
		fmt.Fprintf(w, "left out (null baseline): %s\n", strings.Join(rep.Excluded, ", "))
	}
	fmt.Fprintf(w, "baseline val_score=%.4f (results.tsv row 0)\n", rep.ValScore)
	if rep.Trials != nil {
		fmt.Fprintf(w, "trials: %s\n", trialsText(rep.Trials).Text())
	}
	fmt.Fprintf(w, "created: %s\n", strings.Join(rep.Created, ", "))
	return nil
}

func (c *prepareCmd) options() gate.PrepareOptions {
	return gate.PrepareOptions{ZeroBaselineOK: c.ZeroBaselineOK}
}

// warnScorers says, once a workspace is prepared, when allow matches a file the
// benchmark's commands run: the agent could edit what scores it (hgate check's benchmark
// level says the same). Said on stderr, --json or not.
func warnScorers(g *Globals, env *gate.Env) {
	_, tree, err := env.Repo.Head()
	if err != nil {
		return
	}
	allowed, err := env.Repo.AllowedFiles(tree, env.Config.Allow)
	if err != nil {
		return
	}
	if named := check.AllowedScorers(env.Config.Benchmark, allowed); len(named) > 0 {
		fmt.Fprintln(g.stderr, "hgate: warning: "+check.ScorerWarning(env.Config.Allow, named))
	}
}

// configAtHead makes HEAD's hgate.yaml the configuration env prepares with.
func configAtHead(g *Globals, env *gate.Env) error {
	cfg, _, err := gate.ConfigAtHead(env.Repo, env.Config.File)
	if err != nil {
		return err
	}
	gate.Warn(g.stderr, cfg)
	env.Config = cfg
	env.CleanRoom = cfg.CleanRoom.Enabled && !g.NoClean
	return nil
}

// printReset says what a reset ended, before prepare's own lines.
func printReset(g *Globals, rs *gate.ResetReport) {
	w := g.stdout
	if rs.Previous.IsZero() {
		fmt.Fprintf(w, "reset: ledger entry %s starts the ledger (there was no previous state)\n", rs.Entry.String()[:7])
	} else {
		fmt.Fprintf(w, "reset: ledger entry %s ends the previous state (%s, kept as its parent: hgate state log shows it)\n",
			rs.Entry.String()[:7], rs.Previous.String()[:7])
	}
	if removed := rs.RemovedPaths(); len(removed) > 0 {
		fmt.Fprintf(w, "reset: removed %s\n", strings.Join(collapseReceipts(removed), ", "))
	}
	best := fmt.Sprintf("%s cleared (was %s)", gitguard.BestRef, gate.ShortOrNone(rs.Best))
	if rs.Best.IsZero() {
		best = gitguard.BestRef + " was not set (no new best since the baseline)"
	}
	fmt.Fprintf(w, "reset: %s now HEAD %s (was %s); %s\n",
		gitguard.GatedRef, rs.Head.String()[:7], gate.ShortOrNone(rs.Gated), best)
}

// collapseReceipts lists the receipts among removed paths as one entry with their count:
// there is one per gated tree, hundreds after a night (--json keeps every path).
func collapseReceipts(paths []string) []string {
	var out []string
	n, at, dir := 0, -1, ""
	for _, p := range paths {
		if d := filepath.Dir(p); filepath.Base(d) == workspace.ReceiptsDir && strings.HasSuffix(p, ".json") {
			if n == 0 {
				at, dir = len(out), d
				out = append(out, "")
			}
			n++
			continue
		}
		out = append(out, p)
	}
	if n > 0 {
		noun := "receipts"
		if n == 1 {
			noun = "receipt"
		}
		out[at] = fmt.Sprintf("%s/ (%d %s)", filepath.ToSlash(dir), n, noun)
	}
	return out
}
