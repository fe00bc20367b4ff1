package loop

import (
	"fmt"

	"github.com/hgate/hgate/gate"
)

// commit commits the change the gate passed.
func (st *step) commit() (bool, error) {
	r := st.r
	if err := r.commit(st.n); err != nil {
		return false, err
	}
	return false, r.phase(phaseRecord)
}

// record appends the kept commit's row to results.tsv.
func (st *step) record() (bool, error) {
	r := st.r
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
