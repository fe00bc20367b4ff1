package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hgate/hgate/agentapi"
)

// runFast answers the two command lines that run most often, and only those, exactly as
// spelled, before Kong builds its model by reflection (about a fifth of their start):
// "--version", which every install script and bug report runs, and "hooks run pre-commit",
// which git runs on every commit. Any other spelling (another flag, -C, --json, a typo)
// takes Kong's path, so help, errors and usage stay Kong's. ok is false when args are not
// one of the two; TestRunFastMatchesKong holds the answers to Kong's.
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
		return runPreCommit(stdout, stderr), true
	}
	return 0, false
}

// runPreCommit is "hgate hooks run pre-commit" with the globals' defaults, over the same
// providers and report Kong's path binds (openRepo, loadConfig, report).
func runPreCommit(stdout, stderr io.Writer) int {
	var c cli
	g := &c.Globals
	g.Dir, g.stdout, g.stderr = ".", &countingWriter{w: stdout}, stderr
	c.Hooks.Run.Hook = "pre-commit"
	repo, err := openRepo(g)
	if err == nil {
		cfg, cerr := loadConfig(g, repo)
		if err = cerr; err == nil {
			err = c.Hooks.Run.Run(g, repo, cfg)
		}
	}
	code, _ := report(stderr, g.repoRoot, err)
	return code
}
