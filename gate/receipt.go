package gate

import (
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// Receipt is the gate's verdict bound to the candidate tree it judged. record appends a
// results.tsv row only for a commit whose tree has a passing receipt, and takes its numbers
// from the receipt, not from the caller.
type Receipt struct {
	Tree        string   `json:"tree"`
	Head        string   `json:"head"`
	Verdict     string   `json:"verdict"`
	ValScore    float64  `json:"val_score"`
	Best        *float64 `json:"best"`
	SuitePassed int      `json:"suite_passed"`
	SuiteTotal  int      `json:"suite_total"`
	Promoted    []string `json:"promoted"`
	Timestamp   string   `json:"timestamp"`
	// The test split's score for this tree, reused by later gates of the same tree.
	TestTasks int    `json:"test_tasks"` // -1 when the run was cut short
	Nulls     int    `json:"nulls"`
	ScoredAt  string `json:"scored_at"`
	CleanRoom bool   `json:"clean_room"` // a score from outside the clean room is not reused inside it
	// ValMean is val_score before rounding to 4 decimals (see ExactScore); on disk it is
	// sealed like TestResults (ValMeanSHA names its held-out record: see heldMean), in
	// receipts from older versions plain or absent.
	ValMean    *float64 `json:"val_mean,omitempty"`
	ValMeanSHA string   `json:"val_mean_sha256,omitempty"`
	// With gate.trials/margin: every test trial's reward per task (never printed; the best's
	// are what later gates compare with), trials per task, flaky test tasks, and whether
	// this tree is a confident, replicated improvement that record makes the new best.
	Trials      int    `json:"trials,omitempty"`
	TestResults Trials `json:"test_results,omitempty"` // only in receipts from older versions (see heldout.go)
	// TestResultsSHA names the held-out record of TestResults (see heldout.go).
	TestResultsSHA string `json:"test_results_sha256,omitempty"`
	Flaky          int    `json:"flaky,omitempty"`
	NewBest        bool   `json:"new_best,omitempty"`
	// Conditions names what the test split ran under (the clean room on or off, the carried
	// files): a later run of the tree pools with these samples only under the same ones.
	Conditions string `json:"conditions,omitempty"`
}

// loadReceipt returns the receipt for tree, or nil when the tree was never gated.
func loadReceipt(ws workspace.Dir, heldout vault, tree string) (*Receipt, error) {
	path := ws.Receipt(tree)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r Receipt
	if err := statefile.DecodeJSON(path, data, &r); err != nil {
		return nil, err
	}
	return &r, r.unseal(heldout, path)
}

// workspace.Baseline is the gate's own record of which train tasks failed at baseline,
// written once by prepare and kept by the ledger; unlike train_results.json, no bench
// rewrites it.

// Baseline is baseline.json.
type Baseline struct {
	Commit       string   `json:"commit"`
	Tree         string   `json:"tree"`
	TrainFailing []string `json:"train_failing"` // train tasks that did not pass at baseline, sorted
	// Test holds the baseline's test trials (gate.trials.max of them per task), the best
	// Step 2 compares with until a new best is recorded; absent without trials.
	Test Trials `json:"test,omitempty"` // only in files from older versions (see heldout.go)
	// TestSHA names the held-out record of Test (see heldout.go).
	TestSHA string `json:"test_sha256,omitempty"`
	// ValMean is the baseline's val_score before rounding (see ExactScore), sealed on disk
	// as the receipt's is (ValMeanSHA); plain or absent in files from older versions.
	ValMean    *float64 `json:"val_mean,omitempty"`
	ValMeanSHA string   `json:"val_mean_sha256,omitempty"`
	// Config is the configuration the baseline was taken under (see measured.go); absent in
	// files from older versions.
	Config *config.Measured `json:"config,omitempty"`
	// Trials is gate.trials: auto's decision at prepare (see trialsauto.go); absent when
	// hgate.yaml set the trials, and in files from older versions.
	Trials *TrialsChoice `json:"trials,omitempty"`
	// KeepPassing is gate.keep_passing as prepare decided it (hgate.yaml's, else on unless
	// the benchmark is Harbor's); absent in files from older versions, which keep it off.
	KeepPassing *bool `json:"keep_passing,omitempty"`
}

// promotionCandidates are the train tasks Step 3 re-runs: those that failed at the last
// gated commit by the gate's own record and are not in the suite. A task that failed at
// baseline and never passed a Step 3 re-run since failed at every gated commit since (each
// passing gate re-ran it), so the baseline record minus the suite is exactly that set.
// Without a baseline record (a workspace prepared by an older hgate) train_results.json
// stands in. A test-split id is never a candidate, whatever the record says.
func promotionCandidates(base *Baseline, train map[string]*float64, suiteTasks, trainSplit []string) []string {
	var failing []string
	if base != nil {
		failing = base.TrainFailing
	} else {
		failing = (&suite.TrainResults{Results: train}).Failing()
	}
	var out []string
	for _, id := range failing {
		if slices.Contains(trainSplit, id) && !slices.Contains(suiteTasks, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// baseline reads baseline.json as the ledger holds it; nil when there is none.
func (s store) baseline() (*Baseline, error) {
	data, err := s.stored(workspace.Baseline)
	if err != nil || data == nil {
		return nil, err
	}
	var b Baseline
	path := s.ws().Path(workspace.Baseline)
	if err := statefile.DecodeJSON(path, data, &b); err != nil {
		return nil, err
	}
	return &b, b.unseal(heldOut(s.Env), path)
}
