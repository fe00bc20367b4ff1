package loop

import (
	"context"
	"errors"
	"fmt"
)

// gate gates what the agent left: nothing changed closes the iteration unchanged, a
// pass goes to the commit, a rejection to a repair (while one may run) or to setting the
// attempt aside.
func (st *step) gate() (bool, error) {
	r := st.r
	j, n, it := r.j, st.n, st.it
	rep, err := r.gate(st.ctx, n)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			// Interrupted mid-gate: leave the agent's work for --resume to gate.
			return false, err
		}
		return false, fmt.Errorf("iteration %d: gate: %w", n, err)
	}
	st.resumed = false
	if err := r.addGateSpend(it, rep); err != nil {
		return false, err
	}
	if rep == nil { // nothing changed
		it.Outcome = OutcomeUnchanged
		return false, r.phase(phaseLearn)
	}
	v := rep.Verdict
	it.Verdict, it.ValScore, it.Reasons = &v, rep.ValScore, rep.Reasons
	if it.Reasons == nil {
		it.Reasons = []string{}
	}
	j.LastReport = rep
	if rep.Passed() {
		head, _, err := r.repo.Head()
		if err != nil {
			return false, err
		}
		j.CommitParent = head.String()
		return false, r.phase(phaseCommit)
	}
	if st.mayRepair() {
		j.Repair++
		it.Repairs = j.Repair
		return false, r.enterAgent()
	}
	return false, r.phase(phaseAttempt)
}

// mayRepair says whether a rejected attempt gets a repair: while repairs are left, no
// ref was tampered with, and neither an interrupt, the deadline nor the budget stops the
// run. A generation's candidate is not repaired: its agent and worktree are gone.
func (st *step) mayRepair() bool {
	r, ctx, j := st.r, st.ctx, st.r.j
	return j.Gen == nil && j.Repair < r.cfg.RepairAttempts && len(j.Tamper) == 0 && ctx.Err() == nil &&
		(r.dead.IsZero() || r.now().Before(r.dead)) && r.book().overBudget() == ""
}
