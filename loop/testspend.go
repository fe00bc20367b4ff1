package loop

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/internal/statefile"
)

// The test split's spend is kept apart from the journal and summary.json, which the agent
// can read during the run: their totals would move after each gate by what the held-out
// tasks cost. It lives in runs/<run>/private/, which the agent's sandbox hides, counts
// against the budget, and reaches summary.json only when the run stops.
const (
	privateDirName = "private"
	testSpendName  = "test_spend.json"
)

// testSpend is runs/<run>/private/test_spend.json: the test split's spend over the run,
// and the last gate whose spend it counts (numbered as the journal's gate_spends) with
// that gate's train spend, which a kill may have kept from the journal.
type testSpend struct {
	CostUSD float64         `json:"cost_usd"`
	Tokens  int64           `json:"tokens"`
	Gates   int             `json:"gates,omitempty"`
	Train   benchmark.Spend `json:"train"`
}

func (r *runner) privateDir() string { return filepath.Join(r.dir, privateDirName) }

// openPrivate makes the run's private folder (it must exist for the sandbox to hide it)
// and reads the test split's spend so far: a resumed run counts on from it.
func (r *runner) openPrivate() error {
	if err := os.MkdirAll(r.privateDir(), 0o700); err != nil {
		return fmt.Errorf("loop: private folder: %w", err)
	}
	path := filepath.Join(r.privateDir(), testSpendName)
	data, _, err := statefile.ReadHead(path, 4096)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("loop: %w", err)
	}
	var t testSpend
	if err := json.Unmarshal(data, &t); err != nil {
		return fmt.Errorf("loop: %s: %w", path, err)
	}
	r.test = t
	if t.Gates == r.j.GateSpends+1 && r.j.Current != nil {
		// Killed between the two writes of a gate's spend: the journal takes its train
		// share now (saved with the next phase; until then this runs again, not twice).
		r.addTrainSpend(r.j.Current, t.Train)
		r.j.GateSpends = t.Gates
	}
	return nil
}

// addTestSpend adds one gate's test-split spend, and keeps its train spend until the
// journal has it, written before the journal moves on: a gate run again after a kill
// spent again, and counts again.
func (r *runner) addTestSpend(test, train benchmark.Spend) error {
	r.test.CostUSD = roundUSD(r.test.CostUSD + test.CostUSD)
	r.test.Tokens += test.Tokens()
	r.test.Gates, r.test.Train = r.j.GateSpends+1, train
	return writeJSON(filepath.Join(r.privateDir(), testSpendName), r.test)
}
