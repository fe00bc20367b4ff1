package gate

import (
	"github.com/hgate/hgate/benchmark"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
)

// The --json objects of hgate record, bench and prepare. Fields are declared in the
// order they print (alphabetical, as the maps they replaced printed them); they may be
// added, never renamed (README, "JSON report").

// RecordJSON is hgate record --json: the row appended, or found already recorded.
type RecordJSON struct {
	Already     bool    `json:"already"`
	Commit      string  `json:"commit"`
	EvalsPassed int     `json:"evals_passed"`
	EvalsTotal  int     `json:"evals_total"`
	Iteration   int     `json:"iteration"`
	NewBest     bool    `json:"new_best"`
	ValScore    float64 `json:"val_score"`
}

// JSON is the report as hgate record --json prints it.
func (r *RecordReport) JSON() RecordJSON {
	row := r.Row
	return RecordJSON{Already: r.Already, Commit: row.Commit, EvalsPassed: row.EvalsPassed, EvalsTotal: row.EvalsTotal,
		Iteration: row.Iteration, NewBest: r.NewBest, ValScore: row.ValScore}
}

// JSON is the report as hgate bench --json prints it.
func (r *BenchReport) JSON() BenchJSON {
	out := BenchJSON{Full: r.Full, Passed: r.Passed, Total: len(r.Tasks), Results: map[string]BenchTaskJSON{}}
	if !r.Spend.Zero() {
		out.Spend = &r.Spend
	}
	for _, id := range r.Tasks {
		res := r.Results[id]
		out.Results[id] = BenchTaskJSON{Passed: res.Passed(), Reason: res.Reason, Reward: res.Reward}
	}
	return out
}

// PrepareJSON is hgate prepare --json; Reset is there only with --reset.
type PrepareJSON struct {
	Created  []string         `json:"created"`
	Excluded []string         `json:"excluded"`
	Final    int              `json:"final,omitempty"` // tasks in the sealed final split, when this run made one
	Passed   int              `json:"passed"`
	Reset    *ResetJSON       `json:"reset,omitempty"`
	Tasks    int              `json:"tasks"`
	Test     int              `json:"test"`
	Train    int              `json:"train"`
	Trials   *TrialsSetting   `json:"trials,omitempty"` // what gate.trials: auto decided, when this run decided it
	ValScore float64          `json:"val_score"`
	Spend    *benchmark.Spend `json:"spend,omitempty"` // the baseline's, where the benchmark reports it (Harbor)
}

// ResetJSON is what hgate prepare --reset ended; a hash that was absent is null.
type ResetJSON struct {
	Entry         string   `json:"entry"`
	Gated         string   `json:"gated"`
	Previous      *string  `json:"previous"`
	PreviousBest  *string  `json:"previous_best"`
	PreviousGated *string  `json:"previous_gated"`
	Removed       []string `json:"removed"`
}

// JSON is the report as hgate prepare --json prints it; reset is nil without --reset.
func (r *PrepareReport) JSON(reset *ResetReport) PrepareJSON {
	out := PrepareJSON{Created: nonNil(r.Created), Excluded: nonNil(r.Excluded), Passed: r.Passed,
		Tasks: r.Tasks, Test: len(r.Test), Train: len(r.Train), Trials: r.Trials, ValScore: r.ValScore, Final: r.Final}
	if !r.Spend.Zero() {
		out.Spend = &r.Spend
	}
	if reset != nil {
		out.Reset = &ResetJSON{Entry: reset.Entry.String(), Gated: reset.Head.String(),
			Previous: HashOrNull(reset.Previous), PreviousBest: HashOrNull(reset.Best), PreviousGated: HashOrNull(reset.Gated),
			Removed: nonNil(reset.RemovedPaths())}
	}
	return out
}

// RemovedPaths are the state files and trace folders a reset removed, as messages name them.
func (r *ResetReport) RemovedPaths() []string { return slices.Concat(r.Removed, r.Traces) }

// HashOrNull is a hash for JSON: nil (null) when zero.
func HashOrNull(h plumbing.Hash) *string {
	if h.IsZero() {
		return nil
	}
	s := h.String()
	return &s
}

// nonNil makes an absent list print as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
