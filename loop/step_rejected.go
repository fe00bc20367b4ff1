package loop

import "fmt"

// attempt keeps a rejected attempt under its attempt ref; when the worktree already
// holds HEAD's again (restored), the restore is skipped.
func (st *step) attempt() (bool, error) {
	r := st.r
	restored, err := r.saveAttempt(st.n)
	if err != nil {
		return false, err
	}
	next := phaseRestore
	if restored {
		st.it.Outcome, next = OutcomeRejected, phaseLearn
	}
	return false, r.phase(next)
}

// restore puts HEAD's worktree back after a rejected attempt.
func (st *step) restore() (bool, error) {
	r := st.r
	if err := r.repo.RestoreHead(r.gopts); err != nil {
		return false, fmt.Errorf("iteration %d: restore HEAD: %w", st.n, err)
	}
	st.it.Outcome = OutcomeRejected
	return false, r.phase(phaseLearn)
}
