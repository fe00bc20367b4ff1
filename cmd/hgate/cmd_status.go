package main

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/suite"
)

// statusCmd prints what the agent may know. Inside the loop's sandbox it is
// forwarded, and the loop answers with the iteration and run id too.
type statusCmd struct{}

func (c *statusCmd) Run(g *Globals, cfg *config.Config) error {
	st, err := statusOf(cfg)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.printJSON(st)
	}
	st.WriteText(g.stdout)
	return nil
}

// statusOf reads the best val_score from results.tsv and the suite's size from
// suite.json in the workspace; both are absent before hgate prepare.
func statusOf(cfg *config.Config) (agentapi.Status, error) {
	st := agentapi.Status{Allow: cfg.Allow}
	ws := cfg.WorkspaceDir()
	rows, err := record.Load(filepath.Join(ws, record.FileName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, err
	}
	if best, ok := record.Best(rows); ok {
		st.Best = &best
	}
	s, err := suite.Load(filepath.Join(ws, suite.FileName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return st, err
	}
	if s != nil {
		st.SuiteSize = len(s.Tasks)
	}
	return st, nil
}
