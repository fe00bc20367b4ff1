package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hgate/hgate/check"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/loop"
)

type checkCmd struct {
	Level []string `name:"level" placeholder:"LEVEL" enum:"config,benchmark,agent" help:"Run only these levels (repeat the flag or separate with commas): config, benchmark, agent; default: all that apply (agent when loop.agent is set)."`
	Tasks int      `name:"tasks" placeholder:"N" default:"4" help:"How many train tasks the benchmark level runs on each tree it tries."`
}

func (c *checkCmd) Help() string {
	return `Levels, in order (when hgate.yaml in use does not load, its errors are the answer and no
other level runs):
  config     hgate.yaml in use loads, and the worktree's copy, when it differs, has no error:
             every error of both at once, with file:line and key.
  benchmark  a few train tasks (the regression suite's first) run on HEAD in a clean room,
             then with every file allow matches emptied, or with benchmark.reference's
             allowed files: a warning, naming what was tried, when no reward moved (a
             benchmark that never reads the allowed files measures noise); benchmark.reference
             must score higher. Nothing is committed; no worktree or state file is written.
  agent      the configured agent (loop.agent) started once in its sandbox, in a scratch linked
             worktree of HEAD, with a prompt asking for one model turn and no work; then hgate
             appends a newline to the first allowed file by a process of its own in that same
             sandbox, and runs Steps 0-1 on the worktree (nothing recorded). It fails with
             exit 2 and one line when the agent cannot start, reach its model or write.
             The worktree is removed after; what the agent spent is reported.

Exit 0: every level holds (warnings allowed); 1: a level said no (hgate.yaml has errors,
no task scored, benchmark.reference does not score higher, Steps 0-1 rejected hgate's
write); 2: a level could not be checked (the agent cannot start, reach its model or write).`
}

func (c *checkCmd) Run(ctx context.Context, g *Globals, repo *gitguard.Repo) error {
	levels := c.levels()
	var rep check.Report
	file, err := configFile(g, repo)
	if err != nil {
		return err
	}
	cfg, res := check.Config(repo, file, g.stderr)
	if cfg == nil {
		// Nothing else can run on a configuration that does not load: its errors are the
		// answer, whichever levels were asked for.
		res.Lines = append(res.Lines, "the other levels were not run")
		rep.Add(res)
	} else if slices.Contains(levels, check.LevelConfig) {
		rep.Add(res)
	}
	if cfg != nil && slices.Contains(levels, check.LevelBenchmark) {
		rep.Add(c.benchmark(ctx, g, cfg, repo))
	}
	if cfg != nil && slices.Contains(levels, check.LevelAgent) && (len(cfg.Loop.Agent) > 0 || len(c.Level) > 0) {
		rep.Add(c.agent(ctx, g, cfg, repo))
	}
	if g.JSON {
		if err := g.printJSON(rep); err != nil {
			return err
		}
	} else {
		rep.WriteText(g.stdout)
	}
	switch rep.Exit {
	case exitNo:
		return answerNo{}
	case exitCannot:
		return checkCannot{rep.FirstCannot()}
	}
	return nil
}

// agent runs the agent level: the configured agent started once in its sandbox.
func (c *checkCmd) agent(ctx context.Context, g *Globals, cfg *config.Config, repo *gitguard.Repo) check.Result {
	release, err := g.lock(ctx, repo, "check")
	if err != nil {
		return check.Result{Level: check.LevelAgent, Status: check.Cannot, Lines: []string{err.Error()}}
	}
	defer release()
	return check.Agent(ctx, loop.PreflightOptions{Env: newEnv(g, cfg, repo), Loop: cfg.Loop, Log: g.stderr})
}

// benchmark runs the benchmark level, when the configuration loaded.
func (c *checkCmd) benchmark(ctx context.Context, g *Globals, cfg *config.Config, repo *gitguard.Repo) check.Result {
	release, err := g.lock(ctx, repo, "check")
	if err != nil {
		return check.Result{Level: check.LevelBenchmark, Status: check.Cannot, Lines: []string{err.Error()}}
	}
	defer release()
	return check.Benchmark(ctx, newEnv(g, cfg, repo), max(c.Tasks, 1))
}

func (c *checkCmd) levels() []string {
	if len(c.Level) == 0 {
		return check.Levels
	}
	var out []string
	for _, l := range c.Level {
		out = append(out, strings.Split(l, ",")...)
	}
	return out
}

// configFile is the slash path of hgate.yaml in the repository, as loadConfig resolves it.
func configFile(g *Globals, repo *gitguard.Repo) (string, error) {
	if g.Config == "" {
		return config.FileName, nil
	}
	dir, err := g.root()
	if err != nil {
		return "", err
	}
	abs := g.Config
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, abs)
	}
	r, err := filepath.Rel(repo.Root(), abs)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("--config %s: the file must be inside the repository (hgate reads it from git)", g.Config)
	}
	return filepath.ToSlash(r), nil
}

// checkCannot is hgate check's "a level could not be checked": exit 2, with the first
// such level's first line as the one line on stderr.
type checkCannot struct{ line string }

func (e checkCannot) Error() string { return "check: " + e.line }
