package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
)

// runFast answers the three command lines that run most often, and only those, exactly as
// spelled, before Kong builds its model by reflection (about a fifth of their start):
// "--version", which every install script and bug report runs, "hooks run pre-commit",
// which git runs on every commit, and "guard", which an agent runs after its edits (Kong's
// model is about a hundred page faults before the guard can start its walk). Any other
// spelling (another flag, -C, --json, a typo) takes Kong's path, so help, errors and usage
// stay Kong's. ok is false when args are not one of the three; TestRunFastMatchesKong
// holds the answers to Kong's.
func runFast(args []string, stdout, stderr io.Writer) (code int, ok bool) {
	switch {
	case len(args) == 1 && args[0] == "--version":
		fmt.Fprintln(stdout, "hgate "+version())
		return exitOK, true
	case len(args) == 3 && args[0] == "hooks" && args[1] == "run" && args[2] == "pre-commit":
		// Inside the loop's sandbox the command is forwarded to the loop: Kong's path.
		if os.Getenv(agentapi.EnvSocket) != "" {
			return 0, false
		}
		return runPlain(stdout, stderr, nil, func(c *cli, g *Globals, repo *gitguard.Repo, cfg *config.Config) error {
			c.Hooks.Run.Hook = "pre-commit"
			return c.Hooks.Run.Run(g, repo, cfg)
		}), true
	case len(args) == 1 && args[0] == "guard":
		// Inside the loop's sandbox the command is forwarded to the loop, and a shell's
		// completion (COMP_LINE) is answered: both Kong's path.
		if os.Getenv(agentapi.EnvSocket) != "" || os.Getenv("COMP_LINE") != "" {
			return 0, false
		}
		// The index is read while hgate.yaml loads (a process that checks once: the
		// mapping it is read through is kept).
		preload := func(c *cli, repo *gitguard.Repo) { c.Guard.preload = repo.PreloadIndex() }
		return runPlain(stdout, stderr, preload, func(c *cli, g *Globals, repo *gitguard.Repo, cfg *config.Config) error {
			return c.Guard.Run(g, repo, cfg)
		}), true
	}
	return 0, false
}

// runPlain runs a command that takes no context (signals end it, as on Kong's path) with
// the globals' defaults, over the same providers and report Kong's path binds (openRepo,
// loadConfig, report). opened, when not nil, starts what the command needs of the
// repository alone, before hgate.yaml loads.
func runPlain(stdout, stderr io.Writer, opened func(*cli, *gitguard.Repo), run func(*cli, *Globals, *gitguard.Repo, *config.Config) error) int {
	var c cli
	g := &c.Globals
	g.Dir, g.stdout, g.stderr = ".", &countingWriter{w: stdout}, stderr
	repo, err := openRepo(g)
	if err == nil {
		if opened != nil {
			opened(&c, repo)
		}
		cfg, cerr := loadConfig(g, repo)
		if err = cerr; err == nil {
			err = run(&c, g, repo, cfg)
		}
	}
	code, _ := report(stderr, g.repoRoot, err)
	return code
}
