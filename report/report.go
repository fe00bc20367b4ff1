// Package report assembles a repository's hgate history into one typed value — what
// `hgate report --json` prints — and renders it as one self-contained HTML page whose
// plots are SVG drawn here (no script, no network, no external asset).
//
// Everything comes from what hgate already keeps: the ledger's commits since the current
// state began (each gate's receipt and suite.json, results.tsv's rows and where record
// put refs/hgate/gated, train_results.json at the baseline, split.json), and the loop's
// run folders (summary.json or the journal, each iteration's gate.json). State files are
// read from the ledger, never from the workspace, and nothing is written.
//
// The test split appears only as aggregates: its size, val_score, and per attempt the
// counts of test tasks, nulls and flaky tasks. No test task id and no per-task test
// result is copied into a Report (receipts' test_results are dropped after decoding,
// baseline.json is not read), and the train-task matrix keeps only ids in split.json's
// train list.
package report

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/runlog"
	"github.com/hgate/hgate/split"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// Report is a repository's hgate history. Its JSON form is `hgate report --json`:
// fields may be added, never renamed.
type Report struct {
	Repository string    `json:"repository"` // the repository folder's name
	LedgerTip  string    `json:"ledger_tip"` // the ledger commit the report was read from
	Updated    string    `json:"updated"`    // that commit's time (UTC, RFC 3339)
	Split      Split     `json:"split"`
	Baseline   float64   `json:"baseline"` // results.tsv row 0
	Best       float64   `json:"best"`     // the gate's best: where refs/hgate/best moved (bestSteps)
	SuiteSize  int       `json:"suite_size"`
	Rows       []Row     `json:"rows"`     // results.tsv, row 0 first
	Attempts   []Attempt `json:"attempts"` // every gate that wrote a receipt, oldest first
	Train      Matrix    `json:"train_matrix"`
	// SpendUSD and SpendTokens are what the loop's runs spent, the agents' and the
	// benchmark's, summed over the runs.
	SpendUSD    float64 `json:"spend_usd"`
	SpendTokens int64   `json:"spend_tokens"`
	Runs        []Run   `json:"runs"` // the loop's runs, oldest first
	// Final is the last score of the best on the sealed final split, with how often the
	// split was scored and shown (this report counted); absent when never scored.
	Final *gate.FinalScore `json:"final,omitempty"`
	// LabelsWithheld: the final score's per-label rows were left out of this page, which
	// is written in the workspace, where a later run's agent could read them.
	LabelsWithheld bool `json:"-"`
}

// WithholdLabels leaves the per-label scores out of a page written where an agent can
// read it (the workspace): the test and final rows are held-out signal.
func (r *Report) WithholdLabels() {
	if r.Final != nil && len(r.Final.Labels) > 0 {
		c := *r.Final
		c.Labels = nil
		r.Final, r.LabelsWithheld = &c, true
	}
}

// Split is split.json as counts: test ids are never listed.
type Split struct {
	Seed  int64 `json:"seed"`
	Train int   `json:"train"`
	Test  int   `json:"test"`
	Final int   `json:"final,omitempty"` // tasks in the sealed final split
}

// Row is one results.tsv row: a kept iteration (row 0: the baseline).
type Row struct {
	Iteration   int     `json:"iteration"`
	ValScore    float64 `json:"val_score"`
	Commit      string  `json:"commit"`
	EvalsPassed int     `json:"evals_passed"`
	EvalsTotal  int     `json:"evals_total"`
	Time        string  `json:"time"`
	Attempt     int     `json:"attempt"` // the attempt whose receipt it records; 0 for row 0 or when not found
}

// Attempt is one gate verdict the ledger recorded (a gate that got past Step 0; one
// rejected there writes no receipt and shows only in its loop run, if any).
type Attempt struct {
	N           int      `json:"n"` // 1, 2, ... in ledger order
	Time        string   `json:"time"`
	Tree        string   `json:"tree"`
	Head        string   `json:"head"`
	Verdict     string   `json:"verdict"` // pass or reject
	Kept        bool     `json:"kept"`    // recorded in results.tsv
	Iteration   *int     `json:"iteration"`
	ValScore    float64  `json:"val_score"`
	Best        *float64 `json:"best"` // the best it was compared with
	SuitePassed int      `json:"suite_passed"`
	SuiteTotal  int      `json:"suite_total"`
	SuiteSize   int      `json:"suite_size"` // after this gate, its promotions included (they take effect when its tree is recorded)
	Promoted    []string `json:"promoted"`
	TestTasks   int      `json:"test_tasks"` // -1: the test split was cut short (--fail-fast)
	Nulls       int      `json:"nulls"`
	Trials      int      `json:"trials,omitempty"`
	Flaky       int      `json:"flaky,omitempty"`
	NewBest     bool     `json:"new_best,omitempty"` // with trials: the gate confirmed a new best
	Reasons     []string `json:"reasons"`
	Run         string   `json:"run,omitempty"`           // the loop run whose iteration this gate judged
	RunIter     int      `json:"run_iteration,omitempty"` // that iteration
	GateSeconds *float64 `json:"gate_seconds,omitempty"`  // the loop's gate time for that iteration
	AgentSecs   *float64 `json:"agent_seconds,omitempty"` // the agent's time for that iteration
}

// Matrix is the train tasks' results across the history: a column for the baseline, then
// one per attempt (its Step 1 suite results and Step 3 re-runs, as suite.json's
// last_results holds them).
type Matrix struct {
	Columns []string    `json:"columns"` // "baseline", then the attempts' numbers
	Tasks   []MatrixRow `json:"tasks"`   // sorted by id
}

// MatrixRow is one train task's results, one per column: "pass", "fail", "null" (no
// reward) or "" (not run in that column).
type MatrixRow struct {
	Task    string   `json:"task"`
	InSuite bool     `json:"in_suite"` // in the regression suite now
	Results []string `json:"results"`
}

// Run is one run of hgate loop.
type Run struct {
	ID         string  `json:"id"`
	Started    string  `json:"started"`
	Finished   bool    `json:"finished"` // false: still going on, or killed (--resume continues it)
	StopReason string  `json:"stop_reason"`
	StopDetail string  `json:"stop_detail,omitempty"`
	Sandbox    string  `json:"sandbox"`
	Seconds    float64 `json:"seconds"`
	// What the run spent and the budgets it ran under (summary.json's).
	SpendUSD     float64        `json:"spend_usd"`
	SpendTokens  int64          `json:"spend_tokens"`
	BudgetUSD    *float64       `json:"budget_usd,omitempty"`
	BudgetTokens *int64         `json:"budget_tokens,omitempty"`
	Iterations   []RunIteration `json:"iterations"`
	// Gateway is the model gateway's count by phase, in the loop's order, then the
	// run's total (summary.json's gateway); none when the agent was not routed.
	Gateway []GatewayRow `json:"gateway,omitempty"`
}

// GatewayRow is one phase's count at the model gateway ("total" for the run's).
type GatewayRow struct {
	Phase string `json:"phase"`
	gatewayapi.Scope
}

// gatewayRows orders a run's telemetry as the loop's phases run: attempt, repair,
// reflect, build, qualification, then any other, then the total.
func gatewayRows(t *runlog.Telemetry) []GatewayRow {
	if t == nil {
		return nil
	}
	order := []string{"attempt", "repair", "reflect", "build", "qualification"}
	for _, p := range slices.Sorted(maps.Keys(t.Phases)) {
		if !slices.Contains(order, p) {
			order = append(order, p)
		}
	}
	var rows []GatewayRow
	for _, p := range order {
		if c, ok := t.Phases[p]; ok {
			rows = append(rows, GatewayRow{p, c})
		}
	}
	return append(rows, GatewayRow{"total", t.Total})
}

// RunIteration is an iteration as summary.json has it, with the attempt its last gate
// wrote (0: none, as for a Step 0 rejection or an unchanged iteration).
type RunIteration struct {
	runlog.Iteration
	Attempt int `json:"attempt"`
}

// ErrNoState says the ledger holds no prepared state.
var ErrNoState = errors.New("the ledger " + gitguard.LedgerRef + " holds no hgate state: run hgate prepare first")

// AddFinal adds the last score of the sealed final split, with the ledger's count of
// looks, and counts this showing (gate.ShowFinal: in the ledger at once when locked, the
// caller holding the repository lock; else kept until a command holding it records it).
func (r *Report) AddFinal(repo *gitguard.Repo, wsDir string, locked bool) error {
	fs, err := gate.ShowFinal(repo, wsDir, "hgate report", locked)
	r.Final = fs
	return err
}

// Build reads the history of the workspace at workspaceDir in repo.
func Build(repo *gitguard.Repo, workspaceDir string) (*Report, error) {
	l := ledger.Open(repo, workspaceDir)
	hist, rowsAt, err := stateHistory(l)
	if err != nil {
		return nil, err
	}
	tip := hist[len(hist)-1]
	rep := &Report{
		Repository: filepath.Base(repo.Root()),
		LedgerTip:  tip.Hash.String(),
		Updated:    statefile.Timestamp(tip.When),
		Rows:       []Row{},
		Attempts:   []Attempt{},
		Runs:       []Run{},
	}
	sp, err := splitAt(l, tip.Hash)
	if err != nil {
		return nil, err
	}
	rep.Split = Split{Seed: sp.Seed, Train: len(sp.Train), Test: sp.TestCount(), Final: sp.FinalTasks}
	rep.addRows(rowsAt[len(rowsAt)-1])

	// The baseline's train results: train_results.json as the first entry holds it.
	base, err := trainResultsAt(l, hist[0].Hash)
	if err != nil {
		return nil, err
	}
	rep.Train.Columns = []string{"baseline"}
	columns, lastSuite, err := rep.addAttempts(l, repo, hist, rowsAt)
	if err != nil {
		return nil, err
	}
	if lastSuite != nil {
		rep.SuiteSize = len(lastSuite.Tasks)
	}
	rep.Train.Tasks = matrix(sp.Train, append([]map[string]*float64{base}, columns...), lastSuite)

	runs, err := runlog.Runs(workspaceDir)
	if err != nil {
		return nil, err
	}
	linkRuns(rep, runs)
	steps := bestSteps(rep.Baseline, rep.Attempts)
	rep.Best = steps[len(steps)-1]
	return rep, nil
}

// stateHistory is the ledger's entries of the current state, oldest first, each with
// results.tsv's rows as it holds them. The current state began at the newest run of
// commits that all hold results.tsv: before it lies the entry of prepare --reset (or
// prepare's first-gated-commit entry).
func stateHistory(l *ledger.Ledger) ([]gitguard.RefEntry, [][]record.Row, error) {
	entries, err := l.Log(0)
	if err != nil {
		return nil, nil, err
	}
	var hist []gitguard.RefEntry
	var rowsAt [][]record.Row
	for _, e := range entries {
		data, err := l.FileAt(e.Hash, workspace.Results)
		if err != nil {
			return nil, nil, err
		}
		if data == nil {
			break
		}
		rows, err := record.Parse(ledgerName(l, e.Hash, workspace.Results), data)
		if err != nil {
			return nil, nil, err
		}
		hist = append(hist, e)
		rowsAt = append(rowsAt, rows)
	}
	if len(hist) == 0 {
		return nil, nil, ErrNoState
	}
	slices.Reverse(hist)
	slices.Reverse(rowsAt)
	return hist, rowsAt, nil
}

// addRows adds results.tsv's rows as the ledger's tip holds them; the first is the
// baseline.
func (rep *Report) addRows(final []record.Row) {
	for _, r := range final {
		rep.Rows = append(rep.Rows, Row{Iteration: r.Iteration, ValScore: r.ValScore, Commit: r.Commit,
			EvalsPassed: r.EvalsPassed, EvalsTotal: r.EvalsTotal, Time: statefile.Timestamp(r.Timestamp)})
	}
	if len(final) > 0 {
		rep.Baseline = final[0].ValScore
	}
}

// addAttempts adds an attempt for each entry of hist that holds a gate's receipt, and
// links each new row of results.tsv to the commit it records. It returns each attempt's
// train results (suite.json's last_results as its entry holds them), in order, and the
// suite as the last entry holds it.
func (rep *Report) addAttempts(l *ledger.Ledger, repo *gitguard.Repo, hist []gitguard.RefEntry, rowsAt [][]record.Row) ([]map[string]*float64, *suite.Suite, error) {
	var columns []map[string]*float64
	var lastSuite *suite.Suite
	for i, e := range hist {
		// A new row: record kept HEAD, which the same entry made the gated commit.
		if i > 0 && len(rowsAt[i]) > len(rowsAt[i-1]) {
			if err := linkRecord(l, repo, rep, e.Hash, len(rowsAt[i])-1); err != nil {
				return nil, nil, err
			}
		}
		rc, err := gateReceipt(l, e)
		if err != nil {
			return nil, nil, err
		}
		s, err := suiteAt(l, e.Hash)
		if err != nil {
			return nil, nil, err
		}
		lastSuite = s
		if rc == nil {
			continue
		}
		a := attemptOf(rc, s, len(rep.Attempts)+1)
		var results map[string]*float64
		if s != nil {
			results = s.LastResults
		}
		columns = append(columns, results)
		rep.Train.Columns = append(rep.Train.Columns, fmt.Sprint(a.N))
		rep.Attempts = append(rep.Attempts, a)
	}
	// Each row names the attempt it records.
	for _, a := range rep.Attempts {
		if a.Iteration != nil && *a.Iteration < len(rep.Rows) {
			rep.Rows[*a.Iteration].Attempt = a.N
		}
	}
	return columns, lastSuite, nil
}

// ledgerName names a state file as kept in a ledger commit, for messages.
func ledgerName(l *ledger.Ledger, commit plumbing.Hash, name string) string {
	return fmt.Sprintf("%s (ledger %s)", l.Display(name), commit.String()[:7])
}

func splitAt(l *ledger.Ledger, commit plumbing.Hash) (*split.Split, error) {
	data, err := l.FileAt(commit, workspace.Split)
	if err != nil {
		return nil, err
	}
	if data == nil {
		return nil, ErrNoState
	}
	return split.Parse(ledgerName(l, commit, workspace.Split), data)
}

func suiteAt(l *ledger.Ledger, commit plumbing.Hash) (*suite.Suite, error) {
	data, err := l.FileAt(commit, workspace.Suite)
	if err != nil || data == nil {
		return nil, err
	}
	return suite.Parse(ledgerName(l, commit, workspace.Suite), data)
}

func trainResultsAt(l *ledger.Ledger, commit plumbing.Hash) (map[string]*float64, error) {
	data, err := l.FileAt(commit, workspace.TrainResults)
	if err != nil || data == nil {
		return nil, err
	}
	tr, err := suite.ParseTrainResults(ledgerName(l, commit, workspace.TrainResults), data)
	if err != nil {
		return nil, err
	}
	return tr.Results, nil
}

const receiptsPrefix = "receipts/"

// gateReceipt returns the receipt a gate entry wrote: the receipt the entry changed
// (with gate.trials a gate may also rewrite the best's receipt; the message names the
// candidate's tree). nil for any other entry.
func gateReceipt(l *ledger.Ledger, e gitguard.RefEntry) (*gate.Receipt, error) {
	if !strings.HasPrefix(e.Message, "gate: ") {
		return nil, nil
	}
	var names []string
	for _, c := range e.Changed {
		if strings.HasPrefix(c, receiptsPrefix) && ledger.Tracked(c) {
			names = append(names, c)
		}
	}
	if len(names) > 1 {
		if f := strings.Fields(e.Message); len(f) > 2 {
			prefix := receiptsPrefix + f[2] // "gate: tree 1a2b3c4 ..."
			names = slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, prefix) })
		}
	}
	if len(names) != 1 {
		return nil, nil
	}
	data, err := l.FileAt(e.Hash, names[0])
	if err != nil || data == nil {
		return nil, err
	}
	var rc gate.Receipt
	if err := statefile.DecodeJSON(ledgerName(l, e.Hash, names[0]), data, &rc); err != nil {
		return nil, err
	}
	rc.TestResults = nil // per-task test results never go further
	return &rc, nil
}

// attemptOf turns a receipt into an attempt. Reasons are the gate's, as its report
// words them, rebuilt from the receipt; linkRuns replaces them with the loop's copy of
// the gate's own when there is one.
func attemptOf(rc *gate.Receipt, s *suite.Suite, n int) Attempt {
	a := Attempt{
		N: n, Time: rc.Timestamp, Tree: rc.Tree, Head: rc.Head, Verdict: rc.Verdict, ValScore: rc.ValScore,
		Best: rc.Best, SuitePassed: rc.SuitePassed, SuiteTotal: rc.SuiteTotal, Promoted: rc.Promoted,
		TestTasks: rc.TestTasks, Nulls: rc.Nulls, Trials: rc.Trials, Flaky: rc.Flaky, NewBest: rc.NewBest, Reasons: []string{},
	}
	if a.Promoted == nil {
		a.Promoted = []string{}
	}
	if s != nil {
		// The gate's promotions join suite.json when its tree is recorded, in a later
		// ledger commit; the attempt counts them as its own.
		after := &suite.Suite{Tasks: slices.Clone(s.Tasks)}
		after.Promote(rc.Promoted...)
		a.SuiteSize = len(after.Tasks)
	}
	if rc.Verdict == "pass" {
		return a
	}
	if s != nil && rc.SuiteTotal > 0 && float64(rc.SuitePassed)/float64(rc.SuiteTotal) < s.Threshold {
		a.Reasons = append(a.Reasons, fmt.Sprintf("step 1: %d/%d suite tasks passed (%.0f%%), below the threshold %.0f%%",
			rc.SuitePassed, rc.SuiteTotal, 100*float64(rc.SuitePassed)/float64(rc.SuiteTotal), 100*s.Threshold))
	}
	switch {
	case rc.TestTasks < 0:
		a.Reasons = append(a.Reasons, "step 2: stopped early (--fail-fast)")
	case rc.Best != nil && rc.ValScore < *rc.Best:
		a.Reasons = append(a.Reasons, fmt.Sprintf("step 2: val_score %.4f is below the best on record %.4f", rc.ValScore, *rc.Best))
	case len(a.Reasons) == 0:
		a.Reasons = append(a.Reasons, fmt.Sprintf("step 2: val_score %.4f was not kept against the best", rc.ValScore))
	}
	return a
}

// linkRecord marks the attempt that results.tsv row `row` records: the newest attempt
// so far of the tree of the commit the entry made gated.
func linkRecord(l *ledger.Ledger, repo *gitguard.Repo, rep *Report, entry plumbing.Hash, row int) error {
	head, ok, err := l.AnchorAt(entry, gitguard.GatedRef)
	if err != nil || !ok || head.IsZero() {
		return err
	}
	tree, err := repo.TreeOf(head)
	if err != nil {
		return nil // the commit is gone (a rewritten branch, gc): the row stays unlinked
	}
	for i := len(rep.Attempts) - 1; i >= 0; i-- {
		a := &rep.Attempts[i]
		if a.Tree == tree.String() && a.Verdict == "pass" {
			a.Kept = true
			r := row
			a.Iteration = &r
			return nil
		}
	}
	return nil
}

// matrix lays out the train tasks' results by column. Its rows are the train split's ids:
// a test id never appears, whatever a state file says.
func matrix(train []string, columns []map[string]*float64, s *suite.Suite) []MatrixRow {
	inSuite := map[string]bool{}
	if s != nil {
		for _, id := range s.Tasks {
			inSuite[id] = true
		}
	}
	rows := make([]MatrixRow, 0, len(train))
	for _, id := range slices.Sorted(slices.Values(train)) {
		r := MatrixRow{Task: id, InSuite: inSuite[id], Results: make([]string, len(columns))}
		for j, col := range columns {
			reward, ran := col[id]
			switch {
			case !ran:
			case reward == nil:
				r.Results[j] = "null"
			case suite.Passed(reward):
				r.Results[j] = "pass"
			default:
				r.Results[j] = "fail"
			}
		}
		rows = append(rows, r)
	}
	return rows
}

// wroteReceipt reports whether a gate got past Step 0, which is when it writes a receipt:
// a Step 0 rejection's tree leaves the forbidden paths out, so it may be another
// attempt's tree.
func wroteReceipt(r *gate.Answer) bool {
	s0 := r.Steps.Step0
	return s0 == nil || s0.OK || s0.Skipped
}

// linkRuns adds the loop's runs and ties each iteration's last gate to its attempt: the
// first attempt of the same tree not yet tied, at or after the previous one tied. The
// attempt then takes the gate's own reasons and the iteration's durations.
func linkRuns(rep *Report, runs []runlog.RunRecord) {
	next := 0 // attempts before this index are behind every later iteration
	for _, rr := range runs {
		run := Run{ID: rr.RunID, Started: rr.Started, Finished: rr.Finished, StopReason: string(rr.StopReason),
			StopDetail: rr.StopDetail, Sandbox: rr.Sandbox, Seconds: rr.Seconds, Iterations: []RunIteration{},
			SpendUSD: rr.SpendUSD, SpendTokens: rr.SpendTokens, BudgetUSD: rr.BudgetUSD, BudgetTokens: rr.BudgetTokens,
			Gateway: gatewayRows(rr.Gateway)}
		rep.SpendUSD = math.Round((rep.SpendUSD+rr.SpendUSD)*1e6) / 1e6
		rep.SpendTokens += rr.SpendTokens
		for _, it := range rr.Iterations {
			ri := RunIteration{Iteration: it}
			if ri.Reasons == nil {
				ri.Reasons = []string{}
			}
			if gates := rr.Gates[it.Iteration]; len(gates) > 0 && wroteReceipt(gates[len(gates)-1]) {
				last := gates[len(gates)-1]
				for i := next; i < len(rep.Attempts); i++ {
					if rep.Attempts[i].Tree != last.Tree || rep.Attempts[i].Run != "" {
						continue
					}
					// The agent may have gated the same tree itself just before: the loop's
					// gate is the last of them.
					for i+1 < len(rep.Attempts) && rep.Attempts[i+1].Tree == last.Tree && rep.Attempts[i+1].Run == "" {
						i++
					}
					a := &rep.Attempts[i]
					a.Run, a.RunIter = rr.RunID, it.Iteration
					if last.Reasons != nil {
						a.Reasons = slices.Clone(last.Reasons)
					}
					gs, as := it.GateSeconds, it.AgentSeconds
					a.GateSeconds, a.AgentSecs = &gs, &as
					ri.Attempt = a.N
					next = i + 1
					break
				}
			}
			run.Iterations = append(run.Iterations, ri)
		}
		rep.Runs = append(rep.Runs, run)
	}
}

// bestSteps is the gate's best after the baseline and after each attempt, as record moves
// refs/hgate/best: on a kept attempt that scored above it, or, with trials, only on one the
// gate confirmed as a new best (a kept change that merely scored higher is not the best).
func bestSteps(baseline float64, attempts []Attempt) []float64 {
	best := baseline
	out := []float64{best}
	for _, a := range attempts {
		if a.Kept && (a.Trials > 0 && a.NewBest || a.Trials == 0 && a.ValScore > best) {
			best = a.ValScore
		}
		out = append(out, best)
	}
	return out
}
