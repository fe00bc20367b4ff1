package loop

import (
	"context"
	"time"
)

// step is what the phases of one iteration share while hgate runs them: the journal
// holds the rest (its phase, the iteration so far, the spend, the harness state, the
// generation), so a resumed run starts from the phase the journal names.
type step struct {
	r       *runner
	ctx     context.Context
	n       int        // the iteration
	it      *Iteration // the journal's current iteration
	resumed bool       // hgate was killed in the journal's phase: finish it
	start   time.Time  // the iteration's start (journal: IterStarted)
}

// stepFunc runs one phase and moves the journal to the next (r.phase); done is true
// once the iteration is closed.
type stepFunc func(st *step) (done bool, err error)

// steps is the loop's machine: each phase the journal can name, and its step. One file
// each: step_agent.go, step_gate.go, step_kept.go (commit, record), step_rejected.go
// (attempt, restore), harness.go (reflect, build, qualify, artifact_repair) and
// step_learn.go. A table the linker lays out (stepOf reads it), where a map would be
// built at every start of every command.
var steps = [...]struct {
	phase phase
	run   stepFunc
}{
	{phaseAgent, (*step).agent},
	{phaseGate, (*step).gate},
	{phaseCommit, (*step).commit},
	{phaseRecord, (*step).record},
	{phaseAttempt, (*step).attempt},
	{phaseRestore, (*step).restore},
	{phaseLearn, (*step).learn},

	{phaseReflect, (*step).harness}, {phaseBuild, (*step).harness},
	{phaseQualify, (*step).harness}, {phaseArtifactRepair, (*step).harness},
}

// stepOf is the step of phase p; ok is false for a phase hgate does not write.
func stepOf(p phase) (f stepFunc, ok bool) {
	for _, s := range steps {
		if s.phase == p {
			return s.run, true
		}
	}
	return nil, false
}

// harness runs one of the harness phases (harness.go).
func (st *step) harness() (bool, error) {
	r := st.r
	err := harnessRun{r}.harnessPhase(st.ctx, st.n, r.j.Phase, st.resumed)
	st.resumed = false
	return false, err
}
