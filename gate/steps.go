package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/cleanroom"
)

// ran is what Steps 1 and 2 produced on their shared pool.
type ran struct {
	suite, test  *benchmark.Outcome // nil for a step that did not run
	pool         *benchmark.Pool    // the pool Step 2's further trials run on
	stoppedEarly bool               // --fail-fast cancelled the outstanding tasks
	suiteDone    bool               // interrupted: Step 1's tasks had all finished (or there were none)
	ff           *decider
	guard        *benchmark.Outcome // gate.keep_passing's first run, made beside Steps 1 and 2
	early        *early3            // Step 3's first run, when it may start before the steps end
}

// runSteps runs Step 1 (the suite, when it has tasks) and Step 2 (the test split, unless
// its score is reused or Step 2 is deferred) at the same time on one pool, each in a lane of its own: the test
// split shares nothing writable with the train tasks.
// early is Step 3's first run, started once the steps are certain to pass (nil: not early).
func (g *gateRun) runSteps(ctx context.Context, failFast bool, early *early3) (*ran, error) {
	rm, in := g.rm, g.in
	cfg, traces := g.Config, g.traces()
	s, test := in.st.suite, in.sp.Test
	r := &ran{pool: benchmark.NewPool(cfg.Benchmark.Concurrency)}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.ff = in.decider(failFast, cancel, cfg.Benchmark.TimeoutPolicy)
	r.ff.bar = g.progress("gate", r.ff.total)
	if in.cached && failFast && in.hasBest && !in.noisy && in.prior.ValScore < in.bar() {
		cancel(errDecided) // Step 2 is decided already, and it rejects
	}
	if err := os.MkdirAll(traces, 0o755); err != nil {
		return nil, err
	}
	r.early = early
	r.ff.follow(early, r.pool, in, cfg.Benchmark.TimeoutPolicy)
	var run1, run2 *benchmark.Runner
	var err error
	if len(s.Tasks) > 0 {
		if run1, err = rm.Runner(r.pool, cleanroom.Train); err != nil {
			return nil, err
		}
	}
	if in.runsTest() {
		if run2, err = rm.Runner(r.pool, cleanroom.Test); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	var err1, err2 error
	errG := g.runGuarded(runCtx, r, &wg)
	r.ff.onStart()
	if run1 != nil {
		wg.Go(func() {
			r.suite, err1 = run1.Run(runCtx, benchmark.Request{
				Split: "train", Tasks: s.Tasks, TraceDir: traces, Progress: r.ff.onSuite,
			})
		})
	}
	if run2 != nil {
		wg.Go(func() {
			// The held-out split keeps no traces: TraceDir "" never writes its output to disk.
			r.test, err2 = runRetrying(runCtx, run2, benchmark.Request{
				Split: "test", Tasks: test, Progress: r.ff.onTest, Trial: in.firstTrial(),
			})
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		r.suiteDone = run1 == nil || err1 == nil && r.suite != nil
		return r, err
	}
	r.stoppedEarly = errors.Is(context.Cause(runCtx), errDecided)
	for _, err := range []error{err1, err2, *errG} {
		if err != nil && !(r.stoppedEarly && errors.Is(err, context.Canceled)) {
			return nil, err
		}
	}
	g.warnProblems(r.suite, r.test)
	return r, nil
}

// warnProblems prints the runs' problems not tied to one task.
func (g *gateRun) warnProblems(outs ...*benchmark.Outcome) {
	for _, out := range outs {
		if out != nil {
			for _, p := range out.Problems {
				fmt.Fprintf(g.log(), "hgate: warning: %s\n", p)
			}
		}
	}
}

// runGuarded starts gate.keep_passing's first run of the guarded train tasks on r's pool,
// in a train lane of its own, beside Steps 1 and 2: it needs neither's answer, and run
// after them it started only once their last task had ended, leaving the pool's other
// slots idle meanwhile. The error it returns is the run's once wg is done. On a terminal it shows
// no bar of its own: a second bar would redraw over the gate's. Only per-task commands
// (benchmark.run): a batch command or a Harbor job of Step 1's may own {trace_dir}'s
// files whole, so those still run one after the other (guardPassing).
func (g *gateRun) runGuarded(ctx context.Context, r *ran, wg *sync.WaitGroup) *error {
	rm, in := g.rm, g.in
	var err error
	if len(in.guarded) == 0 || len(g.Config.Benchmark.Run) == 0 {
		return &err
	}
	run, err := rm.Runner(r.pool, cleanroom.Train)
	if err != nil {
		return &err // the gate cannot answer: said once Steps 1 and 2 are done
	}
	// Step 3 starting early waits for every guarded task; the suite and the test split may
	// be decided before their last task ends. So the guarded tasks go first, unless
	// --fail-fast wants the test split's rejections seen as early as before.
	req := benchmark.Request{Split: "train", Tasks: in.guarded, Trial: 1, TraceDir: g.traces(), Ahead: r.early != nil && !r.ff.failFast}
	var bar func(done, total int, r benchmark.Result)
	if !benchmark.IsTerminal(g.Progress) {
		bar = g.progress("step 1, passing before", len(in.guarded))
	}
	req.Progress = func(done, total int, res benchmark.Result) {
		if bar != nil {
			bar(done, total, res)
		}
		r.ff.onGuard(done, total, res)
	}
	wg.Go(func() { r.guard, err = run.Run(ctx, req) })
	return &err
}

// follow has d start e3 (nil: none) on pool once Steps 1 and 2 are certain to pass.
func (d *decider) follow(e3 *early3, pool *benchmark.Pool, in *inputs, policy string) {
	if e3 == nil {
		return
	}
	e3.pool = pool
	d.onCertain, d.guardTotal = e3.start, len(in.guarded)
	d.testResults, d.step2Certain = map[string]benchmark.Result{}, in.step2Certain(policy)
}

// decider follows the steps that run; a reused Step 2 is decided already (a deferred one
// is not the gate's to decide), and only the suite is followed.
func (in *inputs) decider(failFast bool, cancel context.CancelCauseFunc, policy string) *decider {
	s, test := in.st.suite, in.sp.Test
	d := &decider{
		failFast: failFast, cancel: cancel, policy: policy,
		suiteTotal: len(s.Tasks), needed: neededToPass(s.Threshold, len(s.Tasks)),
		testTotal: len(test), best: in.bar(), hasBest: in.hasBest && !in.noisy, // trials decide Step 2 later
		total: len(s.Tasks) + len(test),
	}
	if !in.runsTest() {
		d.hasBest, d.total = false, len(s.Tasks)
	}
	return d
}

// step1 is the regression suite's answer; a task the runner did not return counts as
// failed. It notes each suite task's reward in the suite's last_results. traces is where
// the suite's traces are, as the report shows it.
func (in *inputs) step1(r *ran, traces string) *Step1 {
	s := in.st.suite
	s1 := &Step1{OK: true, Skipped: len(s.Tasks) == 0, Total: len(s.Tasks), Threshold: s.Threshold, Failed: []string{}, Traces: traces}
	if !s1.Skipped {
		results := outcomeResults(r.suite)
		s1.Passed, s1.Failed = passedCount(s.Tasks, results)
		s1.OK = s1.Passed >= r.ff.needed
		if s1.OK && len(s1.Failed) > 0 {
			s1.LetThrough = s1.Failed // named: a passing suite must not hide what broke
		}
		s.LastResults = map[string]*float64{}
		for _, id := range s.Tasks {
			s.LastResults[id] = results[id].Reward
		}
	}
	in.rep.Steps.Step1 = s1
	// Cut short by --fail-fast, a step that had not failed yet is undecided: not ok, but
	// not a reason either.
	s1.StoppedEarly = r.stoppedEarly && !s1.Skipped && !r.ff.suiteCertain()
	if !s1.OK && !s1.StoppedEarly {
		in.rep.Reasons = append(in.rep.Reasons, fmt.Sprintf("step 1: %d/%d suite tasks passed (%s), below the threshold %s",
			s1.Passed, s1.Total, percent(float64(s1.Passed)/float64(s1.Total)), percent(s1.Threshold)))
	}
	s1.Guarded = len(in.guarded)
	if len(in.broken) > 0 {
		s1.OK, s1.Broken = false, in.broken
		in.rep.Reasons = append(in.rep.Reasons, keepReason(in.broken))
	}
	return s1
}
