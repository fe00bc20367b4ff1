package gate

import (
	"errors"
	"io/fs"
	"os"
	"sync"

	"github.com/hgate/hgate/internal/statefile"
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
}

// loadReceipt returns the receipt for tree, or nil when the tree was never gated.
func loadReceipt(ws workspace, tree string) (*Receipt, error) {
	path := ws.receipt(tree)
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
	return &r, nil
}

// receiptName is the receipt's name in the workspace (and the ledger).
func receiptName(tree string) string { return "receipts/" + tree + ".json" }

func (r *Receipt) marshal() ([]byte, error) { return statefile.EncodeJSON(r) }

// wrote holds the trees whose receipts this process wrote. The loop serves the agent's
// gates in its own process; a receipt it finds on disk but did not write (an agent that
// ran without the sandbox could have produced one from a room it raced) is not reused.
var wrote = receiptSet{trees: map[string]bool{}}

type receiptSet struct {
	mu    sync.Mutex
	trees map[string]bool
}

func (s *receiptSet) add(tree string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trees[tree] = true
}

// WroteReceipt reports whether this process wrote the receipt of tree.
func WroteReceipt(tree string) bool {
	wrote.mu.Lock()
	defer wrote.mu.Unlock()
	return wrote.trees[tree]
}
