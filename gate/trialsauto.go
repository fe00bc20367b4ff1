package gate

import (
	"context"
	"os"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/workspace"
)

// gate.trials: auto, the default, decides at prepare whether the benchmark needs trials:
// every task runs twice, and a benchmark that gave every task the same reward both times
// is gated with one trial (a single comparison, auto-harness's answers), any other with
// the Noise section's trials and margin (config.Gate.Decide). baseline.json keeps the
// decision next to the benchmark configuration, so every later command applies the same
// one; prepare --reset takes it again.

// TrialsChoice is auto's decision as baseline.json keeps it.
type TrialsChoice struct {
	Tasks     int `json:"tasks"`     // tasks prepare ran twice
	Differing int `json:"differing"` // of them, those whose reward differed between the runs
}

// ledgerChoice is auto's decision as the ledger's baseline.json holds it; nil before
// prepare and for a workspace prepared before auto existed.
func ledgerChoice(repo *gitguard.Repo, cfg *config.Config) (*TrialsChoice, error) {
	data, err := ledger.Open(repo, cfg.WorkspaceDir()).File(workspace.Baseline)
	if err != nil || data == nil {
		return nil, err
	}
	var b Baseline
	if err := statefile.DecodeJSON(workspace.Dir(cfg.WorkspaceDir()).Path(workspace.Baseline), data, &b); err != nil {
		return nil, err
	}
	return b.Trials, nil
}

// applyChoice gives cfg the trials auto chose at prepare. Without a recorded decision
// the trials stay 1..1, as such a workspace was gated before.
func applyChoice(repo *gitguard.Repo, cfg *config.Config) error {
	if !cfg.Gate.TrialsAuto {
		return nil
	}
	c, err := ledgerChoice(repo, cfg)
	if err != nil || c == nil {
		return err
	}
	cfg.Gate.Decide(c.Differing > 0)
	return nil
}

// TrialsSetting is the trials Step 2 runs per test task, and why: gate.trials in
// hgate.yaml (Auto false), or auto's decision at prepare (Tasks and Differing, nil until
// it is taken). hgate status and prepare print it (as agentapi.Trials).
type TrialsSetting struct {
	Auto      bool    `json:"auto"`
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	Margin    float64 `json:"margin"`
	Tasks     *int    `json:"tasks,omitempty"`     // tasks prepare ran twice
	Differing *int    `json:"differing,omitempty"` // of them, those whose reward differed between the runs
}

// TrialsOf is the trials Step 2 runs under cfg (as LoadConfig resolved it), and why.
func TrialsOf(cfg *config.Config, repo *gitguard.Repo) (*TrialsSetting, error) {
	g := cfg.Gate
	t := &TrialsSetting{Auto: g.TrialsAuto, Min: g.TrialsMin, Max: g.TrialsMax, Margin: g.Margin}
	if !g.TrialsAuto {
		return t, nil
	}
	c, err := ledgerChoice(repo, cfg)
	if err != nil || c == nil {
		return t, err
	}
	t.Tasks, t.Differing = &c.Tasks, &c.Differing
	return t, nil
}

// chooseTrials is auto's decision at prepare: it runs tasks a second time (HGATE_TRIAL=2,
// traces discarded) and compares each reward with first's, then applies the decision to
// e.Config. It returns the second run's results, which the baseline's trials pool.
func (e *Env) chooseTrials(ctx context.Context, run requester, tasks []string, first map[string]benchmark.Result) (*TrialsChoice, map[string]benchmark.Result, error) {
	traces, err := e.rooms().TempDir("baseline-2-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(traces)
	out, err := run.Run(ctx, benchmark.Request{
		Split: "all", Tasks: tasks, TraceDir: traces, Trial: 2, Progress: e.progress("baseline, second run", len(tasks)),
	})
	if err != nil {
		return nil, nil, err
	}
	c := &TrialsChoice{Tasks: len(tasks)}
	for _, id := range tasks {
		if varies([]*float64{first[id].Reward, out.Results[id].Reward}) {
			c.Differing++
		}
	}
	e.Config.Gate.Decide(c.Differing > 0)
	return c, out.Results, nil
}
