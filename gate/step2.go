package gate

import (
	"context"
	"fmt"

	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/internal/statefile"
)

// scorer turns the test split's results (or the tree's reused score) into Step 2. It is
// chosen once per gate (inputs.scorer); judge then applies the rules every scorer shares.
type scorer interface {
	score(ctx context.Context, e *Env, rm *cleanroom.Room, in *inputs, r *ran, s1OK bool) (*scored, error)
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

// scorer is oneSample, or trials with gate.trials or a margin.
func (in *inputs) scorer() scorer {
	if in.noisy {
		return trialScorer{}
	}
	return oneSample{}
}

// oneSample compares the test split's val_score, from one run (or the tree's reused
// one), with the best's.
type oneSample struct{}

func (oneSample) score(_ context.Context, e *Env, _ *cleanroom.Room, in *inputs, r *ran, _ bool) (*scored, error) {
	test, policy := in.sp.Test, e.Config.Benchmark.TimeoutPolicy
	sc := &scored{}
	if in.cached {
		p := in.prior
		sc.score, sc.nulls, sc.scoredAt, sc.mean = p.ValScore, p.Nulls, p.ScoredAt, p.ValMean
	} else {
		m, _ := valMean(test, outcomeResults(r.test), policy)
		sc.score, sc.nulls = valScore(test, outcomeResults(r.test), policy)
		sc.mean, sc.scoredAt = &m, statefile.Timestamp(e.now())
	}
	sc.s2 = &Step2{OK: !in.hasBest || sc.score >= in.best, ValScore: sc.score, Tasks: len(test), Nulls: sc.nulls,
		StoppedEarly: r.stoppedEarly && !in.cached && !r.ff.testCertain(), Cached: in.cached}
	// No gate over nothing: under timeout_policy infra a null is left out, and a split of
	// nulls would score 0 over no task — enough to pass a best of 0.
	sc.allNull = !sc.s2.StoppedEarly && sc.nulls == len(test) && policy == "infra"
	sc.worse = fmt.Sprintf("step 2: val_score %.4f is below the best on record %.4f", sc.score, in.best)
	return sc, nil
}

// trialScorer compares task by task with the best's own trials, running more trials
// while undecided (decide).
type trialScorer struct{}

func (trialScorer) score(ctx context.Context, e *Env, rm *cleanroom.Room, in *inputs, r *ran, s1OK bool) (*scored, error) {
	test, policy, g := in.sp.Test, e.Config.Benchmark.TimeoutPolicy, e.Config.Gate
	sc := &scored{trials: Trials{}}
	if in.cached || in.pooled {
		sc.trials.merge(in.prior.TestResults)
	}
	if !in.cached {
		sc.trials.add(test, outcomeResults(r.test))
	}
	var dec *decision
	// A reused score decides without running a task, even after --fail-fast stopped Step 1.
	if !r.stoppedEarly || in.cached {
		var err error
		if dec, err = e.decide(ctx, rm, r.pool, test, sc.trials, in.bestTrials, s1OK && !in.cached); err != nil {
			return nil, err
		}
	}
	m, _ := sc.trials.scoreMean(test, policy)
	sc.score, sc.nulls = sc.trials.score(test, policy)
	sc.mean, sc.scoredAt = &m, statefile.Timestamp(e.now())
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
		sc.allNull = dec.cmp.N == 0 // no task with a reward on both sides to compare
		sc.worse = fmt.Sprintf("step 2: val_score %.4f is worse than the best %.4f by more than the margin %.4f (difference %+.4f over %d trial(s) per task, %s)",
			sc.score, in.best, g.Margin, dec.cmp.Delta, s2.Trials, dec.why)
	}
	sc.s2 = s2
	return sc, nil
}

// judge applies what every scorer shares: a reused score says when it was scored, a step
// cut short or with no reward to compare does not pass, and a failure gives its reason.
// It puts Step 2 in the report.
func (in *inputs) judge(sc *scored) {
	s2, n := sc.s2, len(in.sp.Test)
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
		in.rep.Reasons = append(in.rep.Reasons, fmt.Sprintf("step 2: no test task returned a reward (%d of %d null; timeout_policy: infra leaves nulls out), so there is no val_score to keep", sc.nulls, n))
	default:
		in.rep.Reasons = append(in.rep.Reasons, sc.worse)
	}
}
