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
		st.it.Outcome, next = setAsideOr(st.it), phaseLearn
	}
	return false, r.phase(next)
}

// restore puts HEAD's worktree back after a rejected attempt.
func (st *step) restore() (bool, error) {
	r := st.r
	if err := r.repo.RestoreHead(r.gopts); err != nil {
		return false, fmt.Errorf("iteration %d: restore HEAD: %w", st.n, err)
	}
	st.it.Outcome = setAsideOr(st.it)
	return false, r.phase(phaseLearn)
}

// setAsideOr is the outcome of an attempt kept under its ref: set aside when the budget
// cut it (never gated), else rejected.
func setAsideOr(it *Iteration) Outcome {
	if it.BudgetCut != "" {
		return OutcomeSetAside
	}
	return OutcomeRejected
}
