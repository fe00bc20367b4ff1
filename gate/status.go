package gate

import (
	"errors"
	"io/fs"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// Standing is what hgate status tells the agent of the workspace: the best val_score in
// results.tsv (nil before prepare) and the size of the regression suite in suite.json.
func Standing(cfg *config.Config) (best *float64, suiteSize int, err error) {
	ws := workspace.Dir(cfg.WorkspaceDir())
	rows, err := record.Load(ws.Results())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, 0, err
	}
	if b, ok := record.Best(rows); ok {
		best = &b
	}
	s, err := suite.Load(ws.Suite())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return best, 0, err
	}
	if s != nil {
		suiteSize = len(s.Tasks)
	}
	return best, suiteSize, nil
}
