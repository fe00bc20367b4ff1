package runlog

import (
	"fmt"
	"time"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/spend"
)

// Phase is the step of an iteration the journal says is in progress: a resumed run
// starts again there.
type Phase string

// The phases, in the order an iteration goes through them (agent and gate repeat for a
// repair; attempt and restore only for a rejected change).
const (
	PhaseNone    Phase = ""        // between iterations
	PhaseAgent   Phase = "agent"   // the agent runs
	PhaseGate    Phase = "gate"    // the gate judges what it left
	PhaseCommit  Phase = "commit"  // a passing change is committed
	PhaseRecord  Phase = "record"  // and recorded in results.tsv
	PhaseAttempt Phase = "attempt" // a rejected change is kept under its attempt ref
	PhaseRestore Phase = "restore" // and HEAD's worktree is put back
	PhaseLearn   Phase = "learn"   // the learnings.md entry is written, the iteration closed
)

// JournalName is the journal's file in the run's folder.
const JournalName = "journal.json"

// Journal is the run's progress, rewritten atomically around every phase.
type Journal struct {
	RunID        string `json:"run_id"`
	Started      string `json:"started"`
	Deadline     string `json:"deadline"` // RFC 3339, "" = none
	Next         int    `json:"next"`     // the iteration in progress, or the next one
	Phase        Phase  `json:"phase"`
	Repair       int    `json:"repair"`
	PreHead      string `json:"pre_head"`
	CommitParent string `json:"commit_parent"`
	AgentPID     int    `json:"agent_pid"`
	AgentStart   string `json:"agent_start"`
	// AgentTag is in the environment of every process of the agent (HGATE_AGENT_TAG),
	// random so that killing its leftovers by it reaches no other run's processes: run
	// ids are start times, and two loops can start in the same second.
	AgentTag string `json:"agent_tag,omitempty"`
	// AgentEnded: the agent of the harness phase in progress has ended and its spend is
	// counted; the phase is not over (its worktree may not be put back yet).
	AgentEnded  bool         `json:"agent_ended,omitempty"`
	IterStarted string       `json:"iter_started"`
	Current     *Iteration   `json:"current"`
	LastReport  *gate.Answer `json:"last_report"`
	Iterations  []Iteration  `json:"iterations"`
	Baseline    *float64     `json:"baseline"`
	BestAtStart *float64     `json:"best_at_start"`
	SinceBest   int          `json:"since_best"`
	Crashes     int          `json:"crashes"`
	StopReason  StopReason   `json:"stop_reason"`
	StopDetail  string       `json:"stop_detail"`
	// Refs is refs/hgate/* as hgate left them before the agent's phase (and after each
	// command it served the agent); Tamper lists what changed behind hgate's back since.
	Refs   gitguard.RefSnapshot `json:"refs,omitempty"`
	Tamper []string             `json:"tamper,omitempty"`
	// Sandbox is how the agent runs: "landlock ABI N", or "off".
	Sandbox string `json:"sandbox"`
	// LearningNo is the number of the iteration's learnings.md entry, once chosen.
	LearningNo int `json:"learning_no,omitempty"`
	// SessionTokens is what the agent's CLI last reported for the iteration's session when
	// it counts a session cumulatively (codex): a resumed run's own share is the rest.
	SessionTokens *spend.Tokens `json:"session_tokens,omitempty"`
	// FreshSession: a repair could not resume the session; the iteration's next repairs
	// start fresh ones.
	FreshSession bool `json:"fresh_session,omitempty"`
	// HarnessRepair is the artifact repair in progress (0: the first qualification).
	HarnessRepair int `json:"harness_repair,omitempty"`
	// HarnessPrior are the artifacts qualified before the iteration, unchanged since, by
	// path (their content digest): the iteration's final failure does not quarantine them.
	HarnessPrior map[string]string `json:"harness_prior,omitempty"`
	// SpendUSD and SpendTokens are what the run has spent so far, the agent's and the
	// train runs' (the iteration in progress included; the test split's is kept apart, see
	// loop/testspend.go): a resumed run counts on from them.
	SpendUSD    float64 `json:"spend_usd,omitempty"`
	SpendTokens int64   `json:"spend_tokens,omitempty"`
	// GateSpends counts the gates whose spend the journal holds; test_spend.json's gates
	// one more: its train share is not here yet (see loop's openPrivate).
	GateSpends int `json:"gate_spends,omitempty"`
	// Metering is the model gateway's count of the agent's session in flight, journaled at
	// each usage event (see loop/gateway.go): a resume after kill -9 counts what was seen.
	Metering *MeterState `json:"metering,omitempty"`
	// Telemetry is the gateway's count over the run, by phase (attempt, repair, reflect,
	// build, qualification).
	Telemetry map[string]gatewayapi.Scope `json:"telemetry,omitempty"`
	// Gen is the generation in progress (loop.agents > 1); Generations counts those done.
	Gen         *Generation `json:"generation,omitempty"`
	Generations int         `json:"generations,omitempty"`
}

// RunSandbox is how the run's agent ran: "off" when any iteration ran it unsandboxed (a
// resume with the sandbox on never relabels those) or does not say how it ran (a journal
// from an older hgate, or one the agent edited), else how it runs now.
func (j *Journal) RunSandbox() string {
	its := j.Iterations
	if j.Current != nil {
		its = append(its[:len(its):len(its)], *j.Current)
	}
	for _, it := range its {
		if it.Sandbox == SandboxOff || it.Sandbox == "" && it.Iteration != 0 && it.Agent != "" {
			return SandboxOff
		}
	}
	return j.Sandbox
}

// Generation is the journal's record of the generation in progress.
type Generation struct {
	Number int    `json:"number"`
	Base   string `json:"base"` // the gated commit every agent started from
	Phase  string `json:"phase"`
	// Refs is refs/hgate/* before the agents started; Tamper what moved behind hgate's
	// back meanwhile (every candidate of the generation is then rejected unscored).
	Refs        gitguard.RefSnapshot `json:"refs,omitempty"`
	Tamper      []string             `json:"tamper,omitempty"`
	Agents      []GenAgent           `json:"agents"`
	NotesMerged bool                 `json:"notes_merged,omitempty"`
}

// GenAgent is one agent of a generation.
type GenAgent struct {
	Index     int    `json:"index"`     // 1..N
	Iteration int    `json:"iteration"` // its candidate's iteration number
	State     string `json:"state"`
	Worktree  string `json:"worktree"`
	PID       int    `json:"pid,omitempty"`
	Start     string `json:"start,omitempty"`
	Tag       string `json:"tag,omitempty"`
	// Candidate is the commit holding what it left, on top of the generation's base; ""
	// when it left nothing.
	Candidate string `json:"candidate,omitempty"`
	// Result is how its agent ran and what it spent, before its gate.
	Result *Iteration `json:"result,omitempty"`
	// Unread are Step 0's reasons for what it left that hgate would not read (a special
	// file, a file over gate.max_file_bytes): its candidate is rejected unscored.
	Unread []string `json:"unread,omitempty"`
	// Metering is its session's count at the model gateway while it runs, rewritten at
	// each usage event (one per agent: bounded however long its streams); a resume after
	// a kill takes its spend from there. Cleared when it ends.
	Metering *MeterState `json:"metering,omitempty"`
}

// MeterState is what the journal holds of the session in flight's count at the gateway,
// rewritten at each usage event: a kill -9 mid-stream loses none of what was seen.
type MeterState struct {
	Scope string           `json:"scope"`
	Count gatewayapi.Scope `json:"count"`
}

// The harness phases (loop.harness.enabled), after the attempt's outcome is settled and
// before the learnings entry: the attempt's gated commit is already on the branch or its
// attempt ref, so nothing that happens here can lose it.
const (
	PhaseReflect        Phase = "reflect"         // the agent names the one tool that would most help
	PhaseBuild          Phase = "build"           // and builds it into the harness folder
	PhaseQualify        Phase = "qualify"         // hgate qualifies the harness folder
	PhaseArtifactRepair Phase = "artifact_repair" // the agent repairs what failed, in its session
)

// ParseJournal decodes a journal as strictly as every other state file (a field of the
// wrong type or a key hgate does not write is an error naming the file, line and field),
// and returns the run's deadline with it (zero: none).
func ParseJournal(path string, data []byte) (*Journal, time.Time, error) {
	var j Journal
	// encoding/json writes the journal, so a nil list is null there.
	if err := statefile.DecodeGoJSON(path, data, &j); err != nil {
		return nil, time.Time{}, err
	}
	switch j.Phase {
	case PhaseNone, PhaseAgent, PhaseGate, PhaseCommit, PhaseRecord, PhaseAttempt, PhaseRestore, PhaseLearn,
		PhaseReflect, PhaseBuild, PhaseQualify, PhaseArtifactRepair:
	default:
		return nil, time.Time{}, fmt.Errorf("%s: phase: %q is not one hgate writes", statefile.Locate(path, data, "phase"), j.Phase)
	}
	var dead time.Time
	if j.Deadline != "" {
		var err error
		if dead, err = time.Parse(time.RFC3339Nano, j.Deadline); err != nil {
			return nil, time.Time{}, fmt.Errorf("%s: deadline: %q is not an RFC 3339 time", statefile.Locate(path, data, "deadline"), j.Deadline)
		}
	}
	return &j, dead, nil
}
