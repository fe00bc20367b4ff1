package gate

import (
	"errors"
	"io/fs"
	"math"
	"os"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/workspace"
)

// Best is the one value hgate calls "the best" — in the gate's "prev best", hgate status,
// the loop's lines, prompt and summary, learnings.md and the report: what Step 2 compares
// a candidate with, refs/hgate/best's estimate.
type Best struct {
	ValScore float64
	// Interval is the estimate's interval at gate.confidence from its trials' spread (nil
	// without trials, or with one trial per task).
	Interval []float64
}

// bestOf is the best from what is known of refs/hgate/best: with trials on and its
// per-task record at hand, its pooled estimate over the test split; else the highest row
// of results.tsv, which is where refs/hgate/best stands without trials (record moves it on
// every higher row). ok is false before prepare.
func bestOf(rows []record.Row, t Trials, test []string, policy string, confidence float64) (Best, bool) {
	if t == nil || len(test) == 0 {
		v, ok := record.Best(rows)
		return Best{ValScore: v}, ok
	}
	v, _ := t.score(test, policy)
	b := Best{ValScore: v}
	if se, ok := t.stderr(test, policy); ok {
		z := zFor(confidence)
		b.Interval = finite(v-z*se, v+z*se)
	}
	return b, true
}

// stderr is the standard error of the pooled val_score from the trials' own spread (the
// tasks are fixed; only the trials vary); ok is false when no task has two trials.
func (t Trials) stderr(tasks []string, policy string) (float64, bool) {
	var v float64
	n, two := 0, false
	for _, id := range tasks {
		var xs []float64
		for _, r := range t[id] {
			switch {
			case r != nil:
				xs = append(xs, *r)
			case policy != "infra":
				xs = append(xs, 0)
			}
		}
		if len(xs) == 0 {
			continue
		}
		n++
		if len(xs) < 2 {
			continue
		}
		two = true
		var m, ss float64
		for _, x := range xs {
			m += x
		}
		m /= float64(len(xs))
		for _, x := range xs {
			ss += (x - m) * (x - m)
		}
		v += ss / float64(len(xs)-1) / float64(len(xs))
	}
	if !two || n == 0 {
		return 0, false
	}
	return math.Sqrt(v) / float64(n), true
}

// CurrentBest reads the best (see Best) from the workspace and refs/hgate/best, as the
// next gate would compare with it. It only reads: no lock, no ledger check, so hgate
// status and the loop can call it at any time. nil before prepare.
func CurrentBest(cfg *config.Config, repo *gitguard.Repo) (*Best, error) {
	ws := workspace.Dir(cfg.WorkspaceDir())
	rows, err := record.Load(ws.Results())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var t Trials
	var test []string
	if cfg.Gate.Noisy() {
		if t, err = bestTrialsOnDisk(ws, repo); err != nil {
			return nil, err
		}
		sp, err := openSplit(vaultOf(repo), ws.Split())
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		if sp != nil {
			test = sp.Test
		}
	}
	b, ok := bestOf(rows, t, test, cfg.Benchmark.TimeoutPolicy, cfg.Gate.Confidence)
	if !ok {
		return nil, nil
	}
	return &b, nil
}

// bestTrialsOnDisk is bestRecord's trials read from the workspace as it is.
func bestTrialsOnDisk(ws workspace.Dir, repo *gitguard.Repo) (Trials, error) {
	ref, err := repo.Ref(gitguard.BestRef)
	if err != nil {
		return nil, err
	}
	if !ref.IsZero() {
		tree, err := repo.TreeOf(ref)
		if err != nil {
			return nil, err
		}
		rc, err := loadReceipt(ws, vaultOf(repo), tree.String())
		if err != nil || rc == nil {
			return nil, err
		}
		return rc.TestResults, nil
	}
	data, err := os.ReadFile(ws.Path(workspace.Baseline))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var b Baseline
	path := ws.Path(workspace.Baseline)
	if err := statefile.DecodeJSON(path, data, &b); err != nil {
		return nil, err
	}
	return b.Test, b.unseal(vaultOf(repo), path)
}
