package loop

import (
	"fmt"

	"github.com/hgate/hgate/gate"
)

// commitStep commits the change the gate passed.
func (r *runner) commitStep(st *step) (bool, error) {
	if err := r.commit(st.n); err != nil {
		return false, err
	}
	return false, r.phase(phaseRecord)
}

// recordStep appends the kept commit's row to results.tsv.
func (r *runner) recordStep(st *step) (bool, error) {
	rr, err := gate.RecordRow(r.env, gate.RecordOptions{})
	if err != nil {
		return false, fmt.Errorf("iteration %d: record: %w", st.n, err)
	}
	st.it.Outcome = OutcomeKept
	// The gate's word, not a comparison of numbers: with trials a higher val_score is
	// not a new best until the gate confirms it (a resumed record reads refs/hgate/best).
	st.it.NewBest = rr.NewBest
	return false, r.phase(phaseLearn)
}
