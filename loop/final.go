package loop

import (
	"context"
	"errors"
	"fmt"

	"github.com/hgate/hgate/gate"
)

// scoreFinal is the end-of-run hook: a run that stopped cleanly, after its last iteration
// and outside any agent's phase, scores its best on the sealed final split (gate.ScoreFinal)
// and says so on the log. A workspace without a final split, or a run that kept nothing,
// scores nothing; a scoring that fails is a warning, never the run's error.
func (r *runner) scoreFinal() *gate.FinalScore {
	ctx := r.endCtx
	if ctx == nil {
		ctx = context.Background()
	}
	if ctx.Err() != nil {
		return nil
	}
	_, err := r.env.ScoreFinal(ctx, "loop run "+r.j.RunID)
	var fs *gate.FinalScore
	if err == nil {
		fs, err = gate.ShowFinal(r.repo, r.env.Config.WorkspaceDir(), "loop run "+r.j.RunID, true)
	}
	switch {
	case errors.Is(err, gate.ErrNoFinal):
		return nil
	case errors.Is(err, gate.ErrBestIsBaseline):
		fmt.Fprintf(r.log, "[loop] final: %v\n", err)
		return nil
	case err != nil:
		fmt.Fprintf(r.log, "[loop] warning: the final split could not be scored: %v\n", err)
		return nil
	}
	for _, l := range fs.Lines() {
		fmt.Fprintf(r.log, "[loop] %s\n", l)
	}
	return fs
}
