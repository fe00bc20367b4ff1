package gate

import (
	"errors"
	"io/fs"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// Standing is what hgate status tells the agent of the workspace: the gate's best
// (CurrentBest; nil before prepare) and the size of the regression suite in suite.json.
func Standing(cfg *config.Config, repo *gitguard.Repo) (best *Best, suiteSize int, err error) {
	ws := workspace.Dir(cfg.WorkspaceDir())
	if best, err = CurrentBest(cfg, repo); err != nil {
		return nil, 0, err
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
