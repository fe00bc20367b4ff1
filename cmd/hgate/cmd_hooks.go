package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/hooks"
)

type hooksCmd struct {
	Install   hooksInstallCmd   `cmd:"" help:"Install hgate's pre-commit hook (core.hooksPath and linked worktrees honoured; an existing hook is kept as pre-commit.pre-hgate and runs first; behind lefthook or the pre-commit framework, in their slot)."`
	Uninstall hooksUninstallCmd `cmd:"" help:"Remove hgate's pre-commit hook and put back the hook it replaced."`
	Run       hooksRunCmd       `cmd:"" help:"Run a hook the way git does: pre-commit refuses a commit that changes paths outside allow."`
}

type hooksInstallCmd struct{}

func (c *hooksInstallCmd) Run(g *Globals, repo *gitguard.Repo) error {
	dir, err := repo.HooksDir()
	if err != nil {
		return err
	}
	res, err := hooks.Install(dir, hgateExecutable())
	return printHookResults(g, repo, res, err)
}

type hooksUninstallCmd struct{}

func (c *hooksUninstallCmd) Run(g *Globals, repo *gitguard.Repo) error {
	dir, err := repo.HooksDir()
	if err != nil {
		return err
	}
	res, err := hooks.Uninstall(dir)
	return printHookResults(g, repo, res, err)
}

func printHookResults(g *Globals, repo *gitguard.Repo, res []hooks.Result, err error) error {
	if err != nil {
		return err
	}
	shown := func(p string) string {
		if rel, err := filepath.Rel(repo.Root(), p); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(rel)
		}
		return p
	}
	hooks.NoteLefthook(repo.Root(), res)
	if g.JSON {
		if err := g.printJSON(hooksJSON{Hooks: res}); err != nil {
			return err
		}
	} else {
		for _, r := range res {
			fmt.Fprintln(g.stdout, r.Describe(shown(r.Path)))
		}
	}
	for _, r := range res {
		if r.Unchecked() {
			front := filepath.Join(filepath.Dir(r.Path), r.Hook)
			fmt.Fprintf(g.stderr, "hgate: warning: lefthook runs %s and not %s: add a job \"run: hgate hooks run %s\" under %s in lefthook.yml, or commits are not checked before the gate\n",
				shown(front), shown(r.Path), r.Hook, r.Hook)
		}
	}
	return nil
}

// hgateExecutable is the absolute path the hook calls hgate by: the path
// hgate was started as (a symlink such as a package manager's bin/hgate
// survives upgrades, where the resolved binary would not), found on PATH when
// started by bare name. "" (hgate on PATH) when neither resolves.
func hgateExecutable() string {
	arg0 := os.Args[0]
	p := arg0
	if !strings.ContainsRune(arg0, filepath.Separator) {
		lp, err := exec.LookPath(arg0)
		if err != nil {
			lp, err = os.Executable()
			if err != nil {
				return ""
			}
		}
		p = lp
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return abs
}

type hooksRunCmd struct {
	Hook string `arg:"" enum:"pre-commit" help:"The hook to run: pre-commit."`
}

func (c *hooksRunCmd) Help() string {
	return `pre-commit checks the index being committed ($GIT_INDEX_FILE when git sets it, as for "git commit -a" and "git commit PATH"; else the repository's index) against HEAD: a staged change to a path outside allow refuses the commit (exit 1) and lists the paths on stderr. Unstaged edits are not part of the commit and are not looked at.

The allowlist comes from hgate.yaml as every hgate command reads it, from the last gated commit (else HEAD), so an edit of hgate.yaml cannot widen it. With file_guard: false the hook lets every commit through, as the gate skips Step 0.`
}

func (c *hooksRunCmd) Run(g *Globals, repo *gitguard.Repo, cfg *config.Config) error {
	if !cfg.FileGuard {
		fmt.Fprintf(g.stderr, "hgate: file_guard is false in %s: commit not checked\n", cfg.File)
		return nil
	}
	vs, err := hooks.PreCommit(repo, cfg.Allow, os.Getenv(hooks.IndexFileEnv))
	if err != nil {
		return err
	}
	if g.JSON {
		if vs == nil {
			vs = []gitguard.Violation{}
		}
		if err := g.printJSON(hookRunJSON{OK: len(vs) == 0, Violations: vs}); err != nil {
			return err
		}
	}
	if len(vs) == 0 {
		return nil
	}
	fmt.Fprintf(g.stderr, "hgate: commit refused: %d staged path(s) outside allow in %s:\n", len(vs), cfg.File)
	for _, v := range vs {
		fmt.Fprintf(g.stderr, "  %s\n", gate.ViolationLine(v, "unstage"))
	}
	// The hook stops the human too: name their way, which Step 0 still checks.
	fmt.Fprintf(g.stderr, "hgate: a change you make yourself on purpose (%s, a benchmark file): git commit --no-verify, then hgate state rebase\n", cfg.File)
	return answerNo{}
}
