package loop

import "path/filepath"

// learn closes the iteration once its outcome is settled: the harness phases first
// when they are on, then the learnings.md entry, the run's counters, the journal, the
// summary and the iteration's line.
func (st *step) learn() (bool, error) {
	r := st.r
	j, n, it := r.j, st.n, st.it
	if r.cfg.Harness.Enabled && it.Harness == nil {
		// The attempt's outcome is settled: the harness phases come first.
		next, err := harnessRun{r}.harnessStart(st.ctx, n)
		if err != nil {
			return false, err
		}
		return false, r.phase(next)
	}
	if it.Harness != nil {
		it.Harness.Calls = harnessRun{r}.countCalls(n)
	}
	if it.Sandbox == "" {
		it.Sandbox = j.Sandbox // the agent never started in this iteration
	}
	if err := r.learn(it); err != nil {
		return false, err
	}
	st.count(it)
	it.Seconds = secs(r.now().Sub(st.start))
	it.CumulativeUSD, it.CumulativeTokens = j.SpendUSD, j.SpendTokens
	j.Iterations = append(j.Iterations, *it)
	j.Current, j.Phase, j.Next = nil, phaseNone, n+1
	j.Refs, j.Tamper, j.LearningNo = nil, nil, 0
	if err := r.save(); err != nil {
		return false, err
	}
	s := r.summary()
	s.StopReason = StopRunning
	if err := writeJSON(filepath.Join(r.dir, "summary.json"), s); err != nil {
		return false, err
	}
	r.report(*it)
	return true, nil
}

// count moves the run's stopping counters by the iteration's outcome: patience (since
// the best) and consecutive crashes.
func (st *step) count(it *Iteration) {
	j := st.r.j
	if it.Outcome == OutcomeKept && it.NewBest {
		j.SinceBest = 0
	} else {
		j.SinceBest++
	}
	switch {
	case it.BudgetCut != "":
		// The gateway's refusal ended the agent: not a crash of its own, nor a sign it runs.
	case it.Agent == AgentCrashed || it.Agent == AgentTimeout && it.Outcome != OutcomeKept:
		j.Crashes++
	default:
		j.Crashes = 0
	}
}
