package loop

import (
	"fmt"

	"github.com/hgate/hgate/internal/fault"
)

// agent runs the agent (the attempt or a repair), or, resumed, ends what is left of
// the agent hgate died under; then the gate, unless the agent did not start.
func (st *step) agent() (bool, error) {
	r := st.r
	j, n, it := r.j, st.n, st.it
	if st.resumed && j.AgentTag == "" {
		// hgate died in the phase before it started the agent (its tools' activation, its
		// session's set-up): nothing ran, so the agent runs now, not "interrupted".
		st.resumed = false
	}
	if st.resumed {
		// hgate died while the agent ran: end what is left of it, gate its work.
		it.Agent, it.AgentDetail = AgentInterrupted, killedDetail
		st.resumed = false
		if err := r.endKilled(n, repairDir(r.iterDir(n), j.Repair)); err != nil {
			return false, err
		}
		fault.Point("loop-agent-resumed") // the killed agent's phase closed, the next not yet saved
	} else if err := r.runAgent(st.ctx, n, j.Repair); err != nil {
		return false, err
	}
	next := phaseGate
	if it.BudgetCut != "" {
		// The budget cut the agent short: its work is set aside under its attempt ref,
		// not gated, and the run stops (stop.go).
		fmt.Fprintf(r.log, "[loop] iteration %d: %s; the attempt is set aside, not gated\n", n, it.BudgetCut)
		it.Reasons = append(it.Reasons, it.BudgetCut)
		return false, r.phase(phaseAttempt)
	}
	if didNotStart(it.AgentDetail) {
		// Nothing the worktree holds is the agent's: what a first attempt finds
		// there is the user's, never gated or committed as the agent's; a repair's
		// attempt is set aside as the gate left it.
		next = phaseAttempt
		if j.Repair == 0 {
			it.Outcome, next = OutcomeUnchanged, phaseLearn
		}
	}
	return false, r.phase(next)
}
