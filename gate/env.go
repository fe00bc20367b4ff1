// Package gate runs hgate's workflows on one repository: prepare (baseline and split), bench
// (train tasks for failure analysis), the gate itself (steps 0-3, its report and its receipt)
// and record (the results.tsv row for a gated commit). The command line calls into it; the
// file formats belong to config, suite, split and record, all git access to gitguard.
package gate

import (
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/workspace"
)

// Env is what every workflow needs: the loaded configuration, the repository, and where to
// report progress and warnings.
type Env struct {
	Config *config.Config
	Repo   *gitguard.Repo
	// Progress receives a live progress line while tasks run; nil shows none.
	Progress io.Writer
	// Log receives warnings and diagnostics; nil discards them.
	Log io.Writer
	// Now is the clock for timestamps; nil means time.Now.
	Now func() time.Time
	// CleanRoom runs every benchmark command in a fresh directory holding only the
	// candidate tree (package cleanroom); off, commands run in the repository itself.
	CleanRoom bool
	// Worktree, when set, is the linked worktree whose candidate bench and gate judge
	// instead of Repo's own (one agent of several in the loop); nil: Repo's.
	Worktree *Worktree

	cr *cleanroom.Rooms // made by the first room, kept for the Env's life (see rooms)
}

// rooms makes the clean rooms of this Env's workflows; made once, so that Landlock is
// looked for and a killed run's rooms are swept once per Env.
func (e *Env) rooms() *cleanroom.Rooms {
	if e.cr == nil {
		e.cr = &cleanroom.Rooms{Config: e.Config, Repo: e.Repo, Log: e.Log, Enabled: e.CleanRoom}
		if e.Worktree != nil && !e.CleanRoom {
			e.cr.Repo = e.Worktree.Repo // no room: commands run in the worktree judged
		}
	}
	return e.cr
}

// OnSpend has fn told of what the benchmark's agents spend as each run reports it, by
// split (train, test), for every workflow of this Env from now on; set it before any runs.
func (e *Env) OnSpend(fn func(split string, s benchmark.Spend)) {
	e.rooms().Meter.OnAdd = fn
}

// Clock is the Env's time, UTC.
func (e *Env) Clock() time.Time {
	if e.Now != nil {
		return e.Now().UTC()
	}
	return time.Now().UTC()
}

func (e *Env) log() io.Writer {
	if e.Log == nil {
		return io.Discard
	}
	return e.Log
}

func (e *Env) guardOptions() gitguard.Options {
	return GuardOptions(e.Config)
}

// Worktree is a linked worktree of the repository judged in its own right: one agent's,
// when the loop runs several at once. Its candidate is its files compared with Base; the
// repository's state (workspace, ledger, refs) is read from Env.Repo and never written,
// and train traces go to Traces, a folder of the worktree's own.
type Worktree struct {
	Repo   *gitguard.Repo // opened at the worktree
	Base   plumbing.Hash  // the gated commit the worktree started from: Step 0 compares with it
	Traces string         // train traces, instead of the workspace's traces/latest
}

// candidate is where the candidate is read, and Step 0's options there.
func (e *Env) candidate() (*gitguard.Repo, gitguard.Options) {
	opts := e.guardOptions()
	if e.Worktree == nil {
		return e.Repo, opts
	}
	opts.Base = e.Worktree.Base
	return e.Worktree.Repo, opts
}

// traces is the folder of this command's train traces.
func (e *Env) traces() string {
	if e.Worktree != nil {
		return e.Worktree.Traces
	}
	return e.ws().Traces("latest")
}

// progress returns a progress callback for total tasks, or nil when progress is off.
func (e *Env) progress(label string, total int) func(done, total int, r benchmark.Result) {
	if e.Progress == nil || total == 0 {
		return nil
	}
	return benchmark.NewProgress(e.Progress, label, total)
}

// progressCount is progress for the held-out split: a count of tasks done, never of
// passes (see benchmark.NewCountProgress).
func (e *Env) progressCount(label string, total int) func(done, total int, r benchmark.Result) {
	if e.Progress == nil || total == 0 {
		return nil
	}
	return benchmark.NewCountProgress(e.Progress, label, total)
}

// ws is the workspace folder, its layout named by package workspace.
func (e *Env) ws() workspace.Dir { return workspace.Dir(e.Config.WorkspaceDir()) }

// GuardOptions are the file guard's settings from hgate.yaml, the same for Step 0, hgate
// guard and the loop: the allowlist, what counts as ignored, and the workspace no symlink
// may lead into.
func GuardOptions(c *config.Config) gitguard.Options {
	o := gitguard.Options{Allow: c.Allow, Ignore: c.GuardIgnore(), MaxFileBytes: c.Gate.MaxFileBytes}
	if !filepath.IsAbs(c.Workspace) {
		o.Workspace = filepath.ToSlash(c.Workspace)
	}
	return o
}

// Display shows a path relative to the repository root, as messages name files.
func (e *Env) Display(path string) string {
	if rel, err := filepath.Rel(e.Repo.Root(), path); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return path
}
