package loop

import (
	"path/filepath"
	"sync"

	"github.com/hgate/hgate/agentout"

	"github.com/hgate/hgate/internal/fault"
)

// agentSlot is where the journal keeps one agent while it runs: the journal's own fields
// for the single agent (the attempt, a repair, a harness phase), a genAgent for each
// agent of a generation. Every agent is journaled the same way through it: its tag and
// its scope at the gateway before it starts, its process once it runs, from where a
// resume ends what a killed hgate left of it (killLeftovers).
type agentSlot struct {
	mu       *sync.Mutex // orders the slot's journal writes with the others of its kind
	save     func() error
	tag      *string
	pid      *int
	start    *string
	metering **meterState
	running  *string // its state, set to agentRunning once it runs (nil: none kept)
	point    string  // the fault point once its process is journaled
}

// slot is agent a's slot in the generation in progress, or, with a nil, the single
// agent's (a generation of one, kept in the journal's own fields) in its phase named
// phase. A generation's agents run side by side, so genMu orders their writes; the single
// agent's are ordered with its refs watch's (refsMu).
func (r *runner) slot(a *genAgent, phase string) agentSlot {
	if a == nil {
		j := r.j
		return agentSlot{mu: &r.refsMu, save: r.save, tag: &j.AgentTag, pid: &j.AgentPID, start: &j.AgentStart, metering: &j.Metering,
			point: "loop-agent-" + phase}
	}
	return agentSlot{mu: &r.genMu, save: r.save, tag: &a.Tag, pid: &a.PID, start: &a.Start, metering: &a.Metering, running: &a.State,
		point: "loop-generation-agent"}
}

// begin journals the agent's tag and its scope at the gateway ("" for none) before it
// starts, so a resumed run can end whatever a killed hgate left of it and count what the
// gateway saw of it.
func (s agentSlot) begin(tag, scope string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.tag, *s.metering = tag, nil
	if scope != "" {
		*s.metering = &meterState{Scope: scope}
	}
	return s.save()
}

// started is the agent process's Started hook: it journals the process once it runs.
func (s agentSlot) started() func(pid int) {
	return func(pid int) {
		s.mu.Lock()
		*s.pid, *s.start = pid, processStart(pid)
		if s.running != nil {
			*s.running = agentRunning
		}
		_ = s.save()
		s.mu.Unlock()
		fault.Point(s.point) // hgate dies while the agent runs
	}
}

// endLeftover ends what is left of the slot's agent when a killed hgate left it running
// (killLeftover), and forgets its process.
func (s agentSlot) endLeftover() {
	killLeftover(*s.pid, *s.start, *s.tag)
	*s.pid, *s.start = 0, ""
}

// meter is the gateway's count of the slot's session, once its agent has ended (nil: not
// metered). The single agent's is taken from the journal here: its spend is counted before
// the write that closes its phase, and a usage event arriving meanwhile must not journal
// that phase again. A generation's agent keeps its own until endAgent journals that it
// ended, in the same write as its spend: the other agents' writes go on meanwhile, and a
// resume after a kill counts it from there.
func (s agentSlot) meter() *meterState {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := *s.metering
	if s.running == nil {
		*s.metering = nil
	}
	return m
}

// killedDetail is the agent detail of an agent hgate died under, ended by the resume.
const killedDetail = "hgate stopped while the agent ran; resumed"

// killedRun ends what is left of the agent in slot s, which hgate died under (the single
// agent's attempt, repair or harness phase, or a generation's agent), and reads what its
// output in dir reports (its spend included) as a finished run's would be read.
func (r *runner) killedRun(s agentSlot, dir string) agentout.Run {
	s.endLeftover()
	return readAgentOutput(r.cli(), filepath.Join(dir, "agent.stdout"), filepath.Join(dir, "agent.stderr"))
}
