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
func (e *Env) AcceptState(who string) ([]string, error) { return store{e}.accept(who) }

// accept is AcceptState.
func (s store) accept(who string) ([]string, error) {
	return s.ledger().Accept(who, stateFileChecker(s.ws()))
}

// stateFileChecker decodes one state file of workspace ws (name relative to it) as the
// commands do, so its errors name the file, line and field alike.
func stateFileChecker(ws workspace.Dir) func(name string, data []byte) error {
	return func(name string, data []byte) error { return checkStateFile(ws.Path(name), name, data) }
}

// checkStateFile decodes state file name, at path, as the commands do.
func checkStateFile(path, name string, data []byte) error {
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
