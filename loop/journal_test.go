package loop

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
)

// TestJournalRoundTrip: a journal as hgate writes it, nil lists and a gate report
// included, reads back and writes back byte for byte.
func TestJournalRoundTrip(t *testing.T) {
	score := 0.5
	verdict := "reject"
	for _, j := range []*journal{
		{RunID: "20260102-030405", Started: "2026-01-02T03:04:05Z", Next: 1, Sandbox: SandboxOff},
		{
			RunID: "20260102-030405-2", Started: "2026-01-02T03:04:05Z", Deadline: "2026-01-02T05:04:05.5Z",
			Next: 3, Phase: phaseAttempt, Repair: 1, PreHead: strings.Repeat("a", 40),
			Current: &Iteration{Iteration: 3, Outcome: OutcomeRejected, Agent: AgentTimeout, Verdict: &verdict, ValScore: &score, Reasons: []string{"step 2"}},
			LastReport: &gate.Answer{Verdict: "reject", ValScore: &score, Steps: gate.Steps{
				Step0: &gate.Step0{OK: true}, Step1: &gate.Step1{OK: false, Failed: []string{"t1"}},
			}},
			Iterations: []Iteration{{Iteration: 1, Outcome: OutcomeKept, Agent: AgentOK, Reasons: []string{}}, {Iteration: 2, Outcome: OutcomeUnchanged, Agent: AgentCrashed}},
			Baseline:   &score, SinceBest: 1, Crashes: 1,
			Refs: gitguard.RefSnapshot{"refs/hgate/gated": strings.Repeat("b", 40)}, Tamper: []string{"refs/hgate/best moved"},
			Sandbox: "landlock ABI 7", LearningNo: 4,
		},
	} {
		data, err := json.MarshalIndent(j, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got, dead, err := parseJournal("journal.json", data)
		if err != nil {
			t.Fatalf("parse:\n%v\nof:\n%s", err, data)
		}
		again, _ := json.MarshalIndent(got, "", "  ")
		if string(again) != string(data) {
			t.Errorf("round trip:\n%s\nwant:\n%s", again, data)
		}
		if want, _ := time.Parse(time.RFC3339Nano, j.Deadline); !dead.Equal(want) {
			t.Errorf("deadline %v, want %v", dead, want)
		}
	}
}

// TestJournalMalformed: a damaged journal stops --resume with one line per problem,
// naming the file, the line and the field, never a Go type.
func TestJournalMalformed(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"wrong type", "{\n  \"run_id\": \"r\",\n  \"next\": \"two\"\n}",
			`runs/r/journal.json:3:11: next: "two" is a string (expected an integer)`},
		{"unknown key", "{\n  \"run_id\": \"r\",\n  \"nxet\": 2\n}",
			`runs/r/journal.json:3: unknown field "nxet" (expected one of "run_id", "started", "deadline", "next", "phase", ` +
				`"repair", "pre_head", "commit_parent", "agent_pid", "agent_start", "agent_tag", "agent_ended", "iter_started", "current", "last_report", ` +
				`"iterations", "baseline", "best_at_start", "since_best", "crashes", "stop_reason", "stop_detail", "refs", ` +
				`"tamper", "sandbox", "learning_no", "session_tokens", "fresh_session", "harness_repair", "harness_prior", "spend_usd", "spend_tokens", "gate_spends", "metering", "telemetry", "generation", "generations")`},
		{"nested", `{"current": {"iteration": 1, "repairs": "none"}}`,
			`runs/r/journal.json:1:41: current.repairs: "none" is a string (expected an integer)`},
		{"bad deadline", "{\"run_id\": \"r\",\n \"deadline\": \"tomorrow\"}",
			`runs/r/journal.json:2:14: deadline: "tomorrow" is not an RFC 3339 time`},
		{"bad phase", "{\"run_id\": \"r\",\n \"phase\": \"deploy\"}",
			`runs/r/journal.json:2:11: phase: "deploy" is not one hgate writes`},
		{"truncated", `{"run_id": "r", "ne`, `runs/r/journal.json:1:17: string never closed (expected a closing '"')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseJournal("runs/r/journal.json", []byte(tt.data))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}
