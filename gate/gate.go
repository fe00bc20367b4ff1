package gate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// Options changes how the gate runs.
type Options struct {
	// FailFast stops every task as soon as the verdict is certain to be a rejection.
	FailFast bool
	// Rerun runs the test split even when this candidate tree was scored before.
	Rerun bool
	// Reuse, when set, decides whether an earlier receipt of the tree may stand in for
	// a new test-split run; the loop reuses only receipts its own process wrote.
	Reuse func(tree string) bool
}

// errDecided cancels outstanding tasks once --fail-fast knows the verdict.
var errDecided = errors.New("verdict decided")

// Run is the gate: Step 0 the file guard, Steps 1 (regression suite, train split) and 2
// (held-out test split) at the same time on one worker pool, then Step 3 (promotion) when
// both passed. It returns the report whatever the verdict; an error means the gate could
// not answer (or was interrupted), and then no state file was changed.
func Run(ctx context.Context, e *Env, opts Options) (*Report, error) {
	cfg := e.Config
	ws := e.ws()
	if err := e.verify(); err != nil {
		return nil, err
	}
	headCommit, _, err := e.Repo.Head()
	if err != nil {
		return nil, err
	}
	// The candidate tree and Step 0's violations come from one look at the worktree.
	tree, v, err := e.Repo.Inspect(e.guardOptions())
	if err != nil {
		return nil, err
	}
	rep := &Report{Verdict: "reject", Tree: tree.String(), Head: headCommit.String(), Reasons: []string{}}

	// Step 0: the file guard. Nothing runs when it fails.
	s0 := &Step0{OK: true, Skipped: !cfg.FileGuard, Violations: []gitguard.Violation{}}
	rep.Steps.Step0 = s0
	if cfg.FileGuard && len(v) > 0 {
		s0.OK, s0.Violations = false, v
		rep.Reasons = append(rep.Reasons, step0Reason(v))
		return rep, nil
	}

	sp, err := e.loadSplit()
	if err != nil {
		return nil, err
	}
	// No gate over nothing: a mean over zero test tasks would pass every change.
	if err := emptySide(ws, sp); err != nil {
		return nil, err
	}
	st, err := loadState(ws)
	if err != nil {
		return nil, err
	}
	if st.suite == nil || st.train == nil || !st.hasRows {
		return nil, fmt.Errorf("the workspace %s is incomplete (suite.json, train_results.json and results.tsv are needed): run hgate prepare", ws)
	}
	s := st.suite
	b, hasBest := bestOf(st.rows, nil, nil, "", 0) // the best as without trials; with them, below
	best := b.ValScore
	// With trials or a margin, Step 2 compares task by task with the best's own trials.
	noisy := cfg.Gate.Noisy()
	var bestTrials Trials
	c := changes{}
	if noisy {
		br, err := e.bestRecord()
		if err != nil {
			return nil, err
		}
		if br != nil && br.trials == nil && !br.tree.IsZero() {
			if err := e.scoreBest(ctx, br, sp.Test, c); err != nil {
				return nil, err
			}
		}
		if br != nil {
			bestTrials = br.trials
		}
		if bestTrials == nil {
			fmt.Fprintf(e.log(), "hgate: warning: gate: trials/margin are set but the best has no per-task record and its tree is unknown (a workspace prepared by an older hgate); Step 2 compares val_score with the best as without them\n")
			noisy = false
		} else {
			b, _ = bestOf(st.rows, bestTrials, sp.Test, cfg.Benchmark.TimeoutPolicy, cfg.Gate.Confidence)
			best = b.ValScore
			hasBest = true
		}
	}
	if hasBest {
		rep.Best = &best
	}
	// Step 2 must not lose to the commit the candidate replaces either.
	gref, err := e.gatedFor(sp.Test, st.rows, noisy)
	if err != nil {
		return nil, err
	}
	bar := best // what the one-trial val_score must reach
	if gref != nil && !noisy {
		bar, hasBest = max(bar, gref.score), true
	}

	// No second look at the test split: a tree scored before keeps its score, so an agent
	// cannot fish for a lucky run by gating the same candidate again.
	prior, err := loadReceipt(ws, rep.Tree)
	if err != nil {
		return nil, err
	}
	cached := prior != nil && prior.TestTasks == len(sp.Test) && !opts.Rerun && (prior.CleanRoom || !e.CleanRoom) &&
		(opts.Reuse == nil || opts.Reuse(rep.Tree)) && (!noisy || prior.TestResults != nil)

	// With trials, a tree's trials pool: --rerun adds to its earlier ones instead of
	// replacing them, so running a tree again refines its estimate and cannot fish for luck.
	pooled := noisy && !cached && opts.Rerun && prior != nil && prior.TestTasks == len(sp.Test) && prior.TestResults != nil
	firstTrial := 1
	if pooled {
		firstTrial += len(prior.TestResults[sp.Test[0]])
	}

	rm, err := e.openVerifiedRoom(tree)
	if err != nil {
		return nil, err
	}
	defer rm.close()

	// Steps 1 and 2 share one pool and run at the same time.
	pool := benchmark.NewPool(cfg.Benchmark.Concurrency)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ff := &decider{
		failFast: opts.FailFast, cancel: cancel, policy: cfg.Benchmark.TimeoutPolicy,
		suiteTotal: len(s.Tasks), needed: neededToPass(s.Threshold, len(s.Tasks)),
		testTotal: len(sp.Test), best: bar, hasBest: hasBest && !noisy, // trials decide Step 2 later
		bar: e.progress("gate", len(s.Tasks)+len(sp.Test)), total: len(s.Tasks) + len(sp.Test),
	}
	if cached {
		ff.hasBest = false // Step 2 is decided already; only the suite is followed
		ff.bar = e.progress("gate", len(s.Tasks))
		ff.total = len(s.Tasks)
		if opts.FailFast && hasBest && !noisy && prior.ValScore < bar {
			cancel(errDecided)
		}
	}
	if err := os.MkdirAll(ws.Traces("latest"), 0o755); err != nil {
		return nil, err
	}
	// Each step runs in a lane of its own: the test split shares nothing writable
	// with the train tasks.
	var run1, run2 *benchmark.Runner
	if len(s.Tasks) > 0 {
		if run1, err = rm.runner(e, pool); err != nil {
			return nil, err
		}
	}
	if !cached {
		if run2, err = rm.runner(e, pool); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	var out1, out2 *benchmark.Outcome
	var err1, err2 error
	if len(s.Tasks) > 0 {
		wg.Go(func() {
			out1, err1 = run1.Run(runCtx, benchmark.Request{
				Split: "train", Tasks: s.Tasks, TraceDir: ws.Traces("latest"), Progress: ff.onSuite,
			})
		})
	}
	if !cached {
		wg.Go(func() {
			// The held-out split keeps no traces: TraceDir "" never writes its output to disk.
			out2, err2 = runRetrying(runCtx, run2, benchmark.Request{
				Split: "test", Tasks: sp.Test, Progress: ff.onTest, Trial: firstTrial,
			})
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stoppedEarly := errors.Is(context.Cause(runCtx), errDecided)
	for _, err := range []error{err1, err2} {
		if err != nil && !(stoppedEarly && errors.Is(err, context.Canceled)) {
			return nil, err
		}
	}
	for _, out := range []*benchmark.Outcome{out1, out2} {
		if out != nil {
			for _, p := range out.Problems {
				fmt.Fprintf(e.log(), "hgate: warning: %s\n", p)
			}
		}
	}

	// Step 1: the regression suite. A task the runner did not return counts as failed.
	s1 := &Step1{OK: true, Skipped: len(s.Tasks) == 0, Total: len(s.Tasks), Threshold: s.Threshold, Failed: []string{}, StoppedEarly: stoppedEarly,
		Traces: e.display(ws.Traces("latest"))}
	if !s1.Skipped {
		results := outcomeResults(out1)
		s1.Passed, s1.Failed = passedCount(s.Tasks, results)
		s1.OK = s1.Passed >= ff.needed
		s.LastResults = map[string]*float64{}
		for _, id := range s.Tasks {
			s.LastResults[id] = results[id].Reward
		}
	}
	rep.Steps.Step1 = s1
	// Cut short by --fail-fast, a step that had not failed yet is undecided: not ok, but
	// not a reason either.
	s1.StoppedEarly = stoppedEarly && !s1.Skipped && !ff.suiteCertain()
	if !s1.OK && !s1.StoppedEarly {
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("step 1: %d/%d suite tasks passed (%s), below the threshold %s",
			s1.Passed, s1.Total, percent(float64(s1.Passed)/float64(s1.Total)), percent(s1.Threshold)))
	}

	// Step 2: the held-out test split, as an aggregate only.
	var score float64
	var nulls int
	var scoredAt string
	var candTrials Trials
	var dec *decision
	// The null policy (nulls.go): a null the code under test caused counts 0.0 where the
	// commits compared with scored the task; all null is no score at all.
	refs := []Trials{bestTrials}
	if gref != nil {
		refs = append(refs, gref.trials)
	}
	test := outcomeResults(out2)
	charged := charge(sp.Test, test, scoredBy(refs...))
	everyNull, infraOnly, why := false, false, ""
	if !cached && !stoppedEarly {
		everyNull, infraOnly, why = allNull(sp.Test, test)
	}
	if everyNull && infraOnly {
		return nil, errAllInfra(len(sp.Test), why)
	}
	if noisy {
		candTrials = Trials{}
		if cached || pooled {
			candTrials.merge(prior.TestResults)
		}
		if !cached {
			candTrials.add(sp.Test, charged)
		}
		if !stoppedEarly {
			dec, err = e.decide(ctx, rm, pool, sp.Test, candTrials, refs, s1.OK && !cached)
			if err != nil {
				return nil, err
			}
		}
	}
	var mean *float64 // score unrounded, when known
	if noisy {
		m, _ := candTrials.scoreMean(sp.Test, cfg.Benchmark.TimeoutPolicy)
		score, nulls = candTrials.score(sp.Test, cfg.Benchmark.TimeoutPolicy)
		mean = &m
		scoredAt = statefile.Timestamp(e.now())
		if cached {
			scoredAt = prior.ScoredAt
		}
	} else if cached {
		score, nulls, scoredAt, mean = prior.ValScore, prior.Nulls, prior.ScoredAt, prior.ValMean
	} else {
		m, _ := valMean(sp.Test, charged, cfg.Benchmark.TimeoutPolicy)
		score, _ = valScore(sp.Test, charged, cfg.Benchmark.TimeoutPolicy)
		_, nulls = valScore(sp.Test, test, cfg.Benchmark.TimeoutPolicy) // every null, charged or not
		mean = &m
		scoredAt = statefile.Timestamp(e.now())
	}
	ok2, against := notWorse(score, best, rep.Best != nil, refScores(gref))
	s2 := &Step2{OK: ok2, ValScore: score, Tasks: len(sp.Test), Nulls: nulls,
		StoppedEarly: stoppedEarly && !cached && !ff.testCertain(), Cached: cached}
	if noisy {
		s2.StoppedEarly = stoppedEarly && !cached
		s2.OK = dec != nil && dec.keep
		flaky := candTrials.flaky(sp.Test)
		s2.Flaky = &flaky
		s2.Trials = len(candTrials[sp.Test[0]])
		if dec != nil {
			s2.Confidence = cfg.Gate.Confidence
			s2.Margin = cfg.Gate.Margin
			s2.Delta = &dec.cmp.Delta
			s2.Interval = finite(best+dec.cmp.Low, best+dec.cmp.High)
			s2.NewBest = dec.newBest
			s2.Replicated = dec.replicated
		}
	}
	if cached {
		s2.ScoredAt = scoredAt
	}
	if hasBest {
		s2.Best = &best
	}
	rep.Steps.Step2 = s2
	rep.ValScore = &s2.ValScore
	if s2.StoppedEarly {
		s2.OK = false
	}
	// No gate over nothing: a split of nulls scores 0 (or nothing, under timeout_policy
	// infra) — enough to pass a best of 0.
	allNull := !s2.StoppedEarly && nulls == len(sp.Test)
	if noisy {
		allNull = everyNull || dec != nil && dec.cmp.N == 0 // no task with a reward on both sides to compare
	}
	if allNull {
		s2.OK = false
	}
	switch {
	case s2.OK || s2.StoppedEarly:
	case allNull:
		rep.Reasons = append(rep.Reasons, allNullReason(len(sp.Test), why))
	case noisy && dec.against > 0:
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("step 2: val_score %.4f is worse than %s, %.4f, by more than the margin %.4f (difference %+.4f over %d trial(s) per task, %s)",
			score, gref.name(), gref.score, cfg.Gate.Margin, dec.cmps[dec.against].Delta, s2.Trials, dec.why))
	case noisy:
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("step 2: val_score %.4f is worse than the best %.4f by more than the margin %.4f (difference %+.4f over %d trial(s) per task, %s)",
			score, best, cfg.Gate.Margin, dec.cmp.Delta, s2.Trials, dec.why))
	case against >= 0:
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("step 2: val_score %.4f is below %s, %.4f", score, gref.name(), gref.score))
	default:
		rep.Reasons = append(rep.Reasons, fmt.Sprintf("step 2: val_score %.4f is below the best on record %.4f", score, best))
	}

	// Step 3: promote train tasks that failed before and pass now. The suite never shrinks.
	if s1.OK && s2.OK {
		base, err := e.ledgerBaseline()
		if err != nil {
			return nil, err
		}
		s3, err := e.promote(ctx, rm, s, promotionCandidates(base, st.train.Results, s.Tasks, sp.Train), cfg.Gate.TrialsMax)
		if err != nil {
			return nil, err
		}
		rep.Steps.Step3 = s3
		rep.Verdict = "pass"
	}
	receipt := &Receipt{
		Tree: rep.Tree, Head: rep.Head, Verdict: rep.Verdict, ValScore: score, Best: rep.Best,
		SuitePassed: s1.Passed, SuiteTotal: s1.Total, Promoted: []string{}, Timestamp: statefile.Timestamp(e.now()),
		TestTasks: len(sp.Test), Nulls: nulls, ScoredAt: scoredAt, CleanRoom: e.CleanRoom, ValMean: mean,
	}
	if noisy {
		receipt.TestResults, receipt.Trials, receipt.Flaky = candTrials, s2.Trials, *s2.Flaky
		receipt.NewBest = s2.NewBest && rep.Verdict == "pass"
	}
	if stoppedEarly && !cached {
		// A test split cut short by --fail-fast is no score to keep for this tree.
		receipt.TestTasks = -1
	}
	if rep.Steps.Step3 != nil {
		receipt.Promoted = rep.Steps.Step3.Promoted
	}
	fault.Point("gate-scored")
	if err := c.add(workspace.Suite, s.Marshal); err != nil {
		return nil, err
	}
	if err := c.add(workspace.Receipt(rep.Tree), receipt.marshal); err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("gate: tree %s %s, val_score %.4f, promoted %d", rep.Tree[:7], rep.Verdict, score, len(receipt.Promoted))
	if opts.Rerun {
		msg += " (--rerun: test split run again)"
	}
	if err := e.apply(msg, c); err != nil {
		return nil, err
	}
	wrote.add(rep.Tree)
	return rep, nil
}

// promote re-runs the candidates (see promotionCandidates) and adds those that pass now.
// Their results go into the suite's last_results, next to Step 1's.
// With trials, a task that passed is run again, up to trials times in all, and joins
// the suite only when it passed every one; one that passed some and failed one is flaky.
func (e *Env) promote(ctx context.Context, rm *room, s *suite.Suite, rerun []string, trials int) (*Step3, error) {
	s3 := &Step3{Ran: true, Rerun: len(rerun), Promoted: []string{}, Flaky: []string{}}
	if len(rerun) == 0 {
		return s3, nil
	}
	run, err := rm.runner(e, nil)
	if err != nil {
		return nil, err
	}
	out, err := run.Run(ctx, benchmark.Request{
		Split: "train", Tasks: rerun, TraceDir: e.ws().Traces("latest"), Progress: e.progress("promotion", len(rerun)),
	})
	if err != nil {
		return nil, err
	}
	var now []string
	for _, id := range rerun {
		r := out.Results[id]
		s.LastResults[id] = r.Reward
		if r.Passed() {
			now = append(now, id)
		}
	}
	for trial := 2; trial <= trials && len(now) > 0; trial++ {
		run, err := rm.runner(e, nil)
		if err != nil {
			return nil, err
		}
		out, err := run.Run(ctx, benchmark.Request{Split: "train", Tasks: now, Trial: trial})
		if err != nil {
			return nil, err
		}
		var still []string
		for _, id := range now {
			if out.Results[id].Passed() {
				still = append(still, id)
			} else {
				s3.Flaky = append(s3.Flaky, id)
				s.LastResults[id] = out.Results[id].Reward
			}
		}
		now = still
	}
	slices.Sort(s3.Flaky)
	s3.Promoted = append(s3.Promoted, s.Promote(now...)...)
	return s3, nil
}

func outcomeResults(out *benchmark.Outcome) map[string]benchmark.Result {
	if out == nil {
		return nil
	}
	return out.Results
}

// neededToPass is the least number of passing suite tasks that meets the threshold.
func neededToPass(threshold float64, total int) int {
	return int(math.Ceil(threshold*float64(total) - 1e-9))
}

// decider follows both steps as tasks finish: it drives the shared progress line and,
// with --fail-fast, cancels the outstanding tasks once a rejection is certain.
type decider struct {
	mu       sync.Mutex
	failFast bool
	cancel   context.CancelCauseFunc
	policy   string

	suiteTotal, needed, suiteFailed int

	testTotal, testDone, testCounted int
	testSum                          float64
	best                             float64
	hasBest                          bool

	bar         func(done, total int, r benchmark.Result)
	done, total int
	decided     bool // the verdict is known; later results are of stopped tasks
}

func (d *decider) onSuite(_, _ int, r benchmark.Result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.decided {
		return // a task stopped by --fail-fast is not a result
	}
	if !r.Passed() {
		d.suiteFailed++
	}
	d.tick(r)
}

func (d *decider) onTest(_, _ int, r benchmark.Result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.decided {
		return
	}
	if r.Reward == nil && r.Null == benchmark.NullInfra {
		d.tick(r) // for Step 2 still to come: runRetrying runs it again, with no progress
		return
	}
	d.testDone++
	if r.Reward != nil {
		d.testSum += *r.Reward
		d.testCounted++
	} else if d.policy != "infra" || r.Null == benchmark.NullCode {
		d.testCounted++ // a null the code caused counts 0.0 (nulls.go)
	}
	d.tick(r)
}

func (d *decider) tick(r benchmark.Result) {
	d.done++
	if d.bar != nil {
		d.bar(d.done, d.total, r)
	}
	if d.failFast && d.rejectionCertain() {
		d.decided = true
		d.cancel(errDecided)
	}
}

// rejectionCertain reports whether Step 1 or Step 2 fails even if every remaining task
// earns a full reward.
func (d *decider) rejectionCertain() bool { return d.suiteCertain() || d.testCertain() }

// suiteCertain reports whether Step 1 fails whatever the remaining suite tasks do.
func (d *decider) suiteCertain() bool { return d.suiteTotal-d.suiteFailed < d.needed }

// testCertain reports whether Step 2 fails whatever the remaining test tasks do.
func (d *decider) testCertain() bool {
	if !d.hasBest {
		return false
	}
	left := d.testTotal - d.testDone
	denom := d.testCounted + left
	if denom == 0 {
		return false
	}
	return round4((d.testSum+float64(left))/float64(denom)) < d.best
}
