package main

import (
	"fmt"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
)

// guardCmd is gate Step 0 alone. It runs even with file_guard: false, since
// asking for it is explicit; it then says that the gate skips it.
type guardCmd struct {
	preload *gitguard.IndexPreload // the repository's index, read ahead by runFast
}

func (c *guardCmd) Help() string {
	return `Checks that only paths matching allow in hgate.yaml changed since the last gated commit (refs/hgate/gated, else HEAD): commits since then, the index, the files on disk and untracked files. This is the check "hgate gate" runs as Step 0, without running any task.

Prints one line per violation: kind, path, and how to revert it. Exit 0 clean, 1 violations, 2 could not answer. With file_guard: false in hgate.yaml the check still runs and says that the gate has it disabled.`
}

func (c *guardCmd) Run(g *Globals, repo *gitguard.Repo, cfg *config.Config) error {
	// Step 0 compares with refs/hgate/gated: it must be where hgate last put it. Guard
	// only reads: a move still to make is read as made, and left to the next writer.
	if err := gate.CheckAnchors(repo, g.stderr); err != nil {
		return err
	}
	opts := gate.GuardOptions(cfg)
	base, err := gate.ReaderBase(repo)
	if err != nil {
		return err
	}
	opts.Base = base
	opts.MapIndex = true // one check, then exit: the mapping is never unmapped
	opts.Preload = c.preload
	if wt := g.worktree; wt != nil {
		repo, opts.Base = wt.Repo, wt.Base // an agent's worktree, from the commit it started at
	}
	vs, err := repo.Check(opts)
	if err != nil {
		return err
	}
	if vs == nil {
		vs = []gitguard.Violation{}
	}
	if !cfg.FileGuard {
		fmt.Fprintf(g.stderr, "hgate: note: file_guard is false in %s: the gate skips this check\n", cfg.File)
	}
	if g.JSON {
		if err := g.printJSON(guardJSON{OK: len(vs) == 0, FileGuard: cfg.FileGuard, Violations: vs}); err != nil {
			return err
		}
	} else {
		(&guardJSON{Violations: vs}).WriteText(g.stdout)
	}
	if len(vs) > 0 {
		fmt.Fprintf(g.stderr, "hgate: %d path(s) changed outside allow in %s\n", len(vs), cfg.File)
		return answerNo{}
	}
	return nil
}
