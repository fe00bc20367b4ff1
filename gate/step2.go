package gate

import (
	"context"
	"fmt"

	"github.com/hgate/hgate/internal/statefile"
)

// scorer turns the test split's results (or the tree's reused score) into Step 2. It is
// chosen once per gate (inputs.scorer); judge then applies the rules every scorer shares.
type scorer interface {
	score(ctx context.Context, g *gateRun, r *ran, s1OK bool) (*scored, error)
}

// scored is a scorer's answer: Step 2 and the figures the receipt keeps.
type scored struct {
	s2       *Step2
	score    float64
	nulls    int
	scoredAt string
	mean     *float64 // score unrounded, when known
	trials   Trials   // with trials: the candidate's, every one
	allNull  bool     // no task with a reward to compare: no val_score to keep
	worse    string   // the reason when Step 2 fails on its score
}

// scorer is deferred for a pending gate, else oneSample, or trials with gate.trials or a
// margin.
func (in *inputs) scorer() scorer {
	if in.pending {
		return deferred{}
	}
	if in.noisy {
		return trialScorer{}
	}
	return oneSample{}
}

// oneSample compares the test split's val_score, from one run (or the tree's reused
// one), with the best's.
type oneSample struct{}

func (oneSample) score(_ context.Context, g *gateRun, r *ran, _ bool) (*scored, error) {
	e, in := g.Env, g.in
	test, policy := in.sp.Test, e.Config.Benchmark.TimeoutPolicy
	sc := &scored{}
	charged, err := in.chargeTest(r, sc)
	if err != nil {
		return nil, err
	}
	switch {
	case in.cached:
		p := in.prior
		sc.score, sc.nulls, sc.scoredAt, sc.mean = p.ValScore, p.Nulls, p.ScoredAt, p.ValMean
		sc.trials = p.TestResults
	case in.pooled:
		// Run again (--rerun, or a stale rejection): the fresh sample pools with the
		// tree's earlier ones, so running a tree again refines its score and cannot fish.
		sc.trials = Trials{}
		sc.trials.merge(in.prior.TestResults)
		sc.trials.add(test, charged)
		m, _ := sc.trials.scoreMean(test, policy)
		sc.score, sc.nulls = sc.trials.score(test, policy)
		sc.mean, sc.scoredAt = &m, statefile.Timestamp(e.Clock())
	default:
		m, _ := valMean(test, charged, policy)
		sc.score, _ = valScore(test, charged, policy)
		_, sc.nulls = valScore(test, outcomeResults(r.test), policy) // every null, charged or not
		sc.mean, sc.scoredAt = &m, statefile.Timestamp(e.Clock())
		sc.trials = Trials{}
		sc.trials.add(test, charged)
	}
	ok, against := notWorse(sc.score, in.best, in.hasBest, refScores(in.gated))
	sc.s2 = &Step2{OK: ok, ValScore: sc.score, Tasks: len(test), Nulls: sc.nulls,
		StoppedEarly: r.stoppedEarly && !in.cached && !r.ff.testCertain(), Cached: in.cached}
	// No gate over nothing: a split of nulls scores 0 (or nothing, under timeout_policy
	// infra) — enough to pass a best of 0.
	sc.allNull = !sc.s2.StoppedEarly && sc.nulls == len(test)
	sc.worse = fmt.Sprintf("step 2: val_score %.4f is below the best on record %.4f", sc.score, in.best)
	if against >= 0 {
		sc.worse = fmt.Sprintf("step 2: val_score %.4f is below %s, %.4f", sc.score, in.gated.name(), in.gated.score)
	}
	return sc, nil
}

// trialScorer compares task by task with the best's own trials, running more trials
// while undecided (decide).
type trialScorer struct{}

func (trialScorer) score(ctx context.Context, run *gateRun, r *ran, s1OK bool) (*scored, error) {
	e, rm, in := run.Env, run.rm, run.in
	test, policy, g := in.sp.Test, e.Config.Benchmark.TimeoutPolicy, e.Config.Gate
	sc := &scored{trials: Trials{}}
	charged, err := in.chargeTest(r, sc)
	if err != nil {
		return nil, err
	}
	if in.cached || in.pooled {
		sc.trials.merge(in.prior.TestResults)
	}
	if !in.cached {
		sc.trials.add(test, charged)
	}
	var dec *decision
	// A reused score decides without running a task, even after --fail-fast stopped Step 1.
	if !r.stoppedEarly || in.cached {
		var err error
		if dec, err = (trialRunner{e, rm, r.pool}).decide(ctx, test, sc.trials, in.refs(), s1OK && !in.cached); err != nil {
			return nil, err
		}
	}
	m, _ := sc.trials.scoreMean(test, policy)
	sc.score, sc.nulls = sc.trials.score(test, policy)
	sc.mean, sc.scoredAt = &m, statefile.Timestamp(e.Clock())
	if in.cached {
		sc.scoredAt = in.prior.ScoredAt
	}
	flaky := sc.trials.flaky(test)
	s2 := &Step2{OK: dec != nil && dec.keep, ValScore: sc.score, Tasks: len(test), Nulls: sc.nulls,
		StoppedEarly: r.stoppedEarly && !in.cached, Cached: in.cached, Flaky: &flaky, Trials: len(sc.trials[test[0]])}
	if dec != nil {
		s2.Confidence, s2.Margin = g.Confidence, g.Margin
		s2.Delta = &dec.cmp.Delta
		s2.Interval = finite(in.best+dec.cmp.Low, in.best+dec.cmp.High)
		s2.NewBest, s2.Replicated = dec.newBest, dec.replicated
		sc.allNull = sc.allNull || dec.cmp.N == 0 // no task with a reward on both sides to compare
		sc.worse = fmt.Sprintf("step 2: val_score %.4f is worse than the best %.4f by more than the margin %.4f (difference %+.4f over %d trial(s) per task, %s)",
			sc.score, in.best, g.Margin, dec.cmp.Delta, s2.Trials, dec.why)
		if !dec.keep && dec.against > 0 {
			sc.worse = fmt.Sprintf("step 2: val_score %.4f is worse than %s, %.4f, by more than the margin %.4f (difference %+.4f over %d trial(s) per task, %s)",
				sc.score, in.gated.name(), in.gated.score, g.Margin, dec.cmps[dec.against].Delta, s2.Trials, dec.why)
		}
	}
	sc.s2 = s2
	return sc, nil
}

// deferred leaves Step 2 to the loop's own gate, after the agent's turn: it rejects
// nothing and scores nothing.
type deferred struct{}

func (deferred) score(context.Context, *gateRun, *ran, bool) (*scored, error) {
	return &scored{s2: &Step2{OK: true, Deferred: true}}, nil
}

// judge applies what every scorer shares: a reused score says when it was scored, a step
// cut short or with no reward to compare does not pass, and a failure gives its reason.
// It puts Step 2 in the report.
func (in *inputs) judge(sc *scored) {
	s2, n := sc.s2, len(in.sp.Test)
	if s2.Deferred {
		in.rep.Steps.Step2 = s2 // no val_score: none was obtained
		return
	}
	if in.cached {
		s2.ScoredAt = sc.scoredAt
	}
	if in.hasBest {
		s2.Best = &in.best
	}
	in.rep.Steps.Step2 = s2
	in.rep.ValScore = &s2.ValScore
	if s2.StoppedEarly || sc.allNull {
		s2.OK = false
	}
	switch {
	case s2.OK || s2.StoppedEarly:
	case sc.allNull:
		in.rep.Reasons = append(in.rep.Reasons, allNullReason(n))
	default:
		in.rep.Reasons = append(in.rep.Reasons, sc.worse)
	}
}
