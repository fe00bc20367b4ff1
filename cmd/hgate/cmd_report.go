package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
	history "github.com/hgate/hgate/report" // report is cli.go's error reporter
	"github.com/hgate/hgate/workspace"
)

// reportCmd writes the repository's hgate history as one HTML page, or prints it as JSON.
type reportCmd struct {
	Output string `short:"o" placeholder:"FILE" help:"Write the HTML page to FILE (relative to -C; - for stdout) instead of workspace/report.html."`
}

func (c *reportCmd) Help() string {
	return `Reads the ledger (refs/hgate/ledger) since prepare and the loop's run folders, and writes one self-contained HTML page: val_score over the attempts with kept and rejected ones marked and the best line, the regression suite's size, each attempt's verdict and reasons, the train tasks' results across attempts, and the loop's durations. The test split appears only as aggregates. Nothing else is written but the count of looks at the sealed final split (one ledger commit when a final score is shown), for which the repository lock is taken when it is free and never waited for: while a loop holds it, the showing waits in the held-out folder until a command holding the lock records it.

With --json it prints the same data as one JSON object instead (see the README) and writes no page.`
}

func (c *reportCmd) Run(ctx context.Context, g *Globals, repo *gitguard.Repo, cfg *config.Config) error {
	rep, err := history.Build(repo, cfg.WorkspaceDir())
	if err != nil {
		return err
	}
	release, locked, err := g.lockToShow(ctx, repo, "report")
	if err != nil {
		return err
	}
	err = rep.AddFinal(repo, cfg.WorkspaceDir(), locked)
	release()
	if err != nil {
		return err
	}
	if g.JSON {
		return g.printJSON(rep)
	}
	var page bytes.Buffer
	if c.Output == "-" {
		if err := rep.WriteHTML(&page); err != nil {
			return err
		}
		_, err := g.stdout.Write(page.Bytes())
		return err
	}
	path := filepath.Join(cfg.WorkspaceDir(), workspace.Report)
	if c.Output != "" {
		dir, err := g.root()
		if err != nil {
			return err
		}
		path = c.Output
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
	} else if _, err := os.Stat(cfg.WorkspaceDir()); errors.Is(err, fs.ErrNotExist) {
		// Making the folder would hide its removal from the ledger's check.
		return fmt.Errorf("%s does not exist (the state is still in the ledger: hgate state restore writes it back); write the report elsewhere with -o FILE", cfg.WorkspaceDir())
	}
	// A page in the workspace is one a later run's agent can read: no per-label rows.
	ws, _ := filepath.Abs(cfg.WorkspaceDir())
	abs, _ := filepath.Abs(path)
	if rel, err := filepath.Rel(ws, abs); err != nil || filepath.IsLocal(rel) {
		rep.WithholdLabels()
	}
	if err := rep.WriteHTML(&page); err != nil {
		return err
	}
	if err := statefile.WriteAtomic(path, page.Bytes()); err != nil {
		return err
	}
	shown := path
	if rel, err := filepath.Rel(repo.Root(), path); err == nil && filepath.IsLocal(rel) {
		shown = filepath.ToSlash(rel)
	}
	fmt.Fprintf(g.stdout, "wrote %s\n", shown)
	return nil
}
