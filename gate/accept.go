package gate

import (
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/split"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// AcceptState is `hgate state accept`: the workspace's state files as they are become a
// manual ledger entry (ledger.Accept), once each reads with the decoder the commands use —
// a file no command could read is refused with the decoder's message, and nothing is
// recorded. It returns the names recorded.
func (e *Env) AcceptState(who string) ([]string, error) {
	return e.ledger().Accept(who, e.checkStateFile)
}

// checkStateFile decodes one state file (name relative to the workspace) as the commands
// do, so its errors name the file, line and field alike.
func (e *Env) checkStateFile(name string, data []byte) error {
	path := e.ws().Path(name)
	var err error
	switch name {
	case workspace.Suite:
		_, err = suite.Parse(path, data)
	case workspace.TrainResults:
		_, err = suite.ParseTrainResults(path, data)
	case workspace.Results:
		_, err = record.Parse(path, data)
	case workspace.Split:
		_, err = split.Parse(path, data)
	case workspace.Baseline:
		err = statefile.DecodeJSON(path, data, &Baseline{})
	}
	return err
}
