package gate

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/workspace"
)

// Trials holds, per test task, the reward of each trial run on one tree (nil = null). The
// best's Trials are kept in its receipt (or baseline.json) and never printed: the gate
// compares with them task by task, and shows only aggregates.
type Trials map[string][]*float64

// add appends one round of results; a task the runner did not return is null.
func (t Trials) add(tasks []string, results map[string]benchmark.Result) {
	for _, id := range tasks {
		t[id] = append(t[id], results[id].Reward)
	}
}

// merge appends every trial of o.
func (t Trials) merge(o Trials) {
	for id, rs := range o {
		t[id] = append(t[id], rs...)
	}
}

// mean is a task's reward averaged over its trials. Under "agent" a null counts 0.0;
// under "infra" it is left out, and a task with no reward at all has none (ok false).
func (t Trials) mean(id, policy string) (float64, bool) {
	var sum float64
	n := 0
	for _, r := range t[id] {
		switch {
		case r != nil:
			sum += *r
			n++
		case policy != "infra":
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// score is val_score over the pooled trials: the mean over tasks of each task's mean.
func (t Trials) score(tasks []string, policy string) (score float64, nulls int) {
	mean, nulls := t.scoreMean(tasks, policy)
	return round4(mean), nulls
}

// scoreMean is score before rounding (see valMean).
func (t Trials) scoreMean(tasks []string, policy string) (mean float64, nulls int) {
	var sum float64
	n := 0
	for _, id := range tasks {
		if slices.Contains(t[id], nil) || len(t[id]) == 0 {
			nulls++
		}
		m, ok := t.mean(id, policy)
		if !ok {
			continue
		}
		sum += m
		n++
	}
	if n == 0 {
		return 0, nulls
	}
	return sum / float64(n), nulls
}

// flaky counts the tasks whose reward differs between trials of this one tree.
func (t Trials) flaky(tasks []string) int {
	n := 0
	for _, id := range tasks {
		if varies(t[id]) {
			n++
		}
	}
	return n
}

func varies(rs []*float64) bool {
	for _, r := range rs[min(1, len(rs)):] {
		if (r == nil) != (rs[0] == nil) || r != nil && *r != *rs[0] {
			return true
		}
	}
	return false
}

// comparison is the paired comparison of a candidate with the best: per test task the
// difference of the two means, then their mean Delta with its standard error and the
// two-sided interval [Low, High] at the gate's confidence (each bound one-sided at it).
type comparison struct {
	N                    int
	Delta, SE, Low, High float64
}

// compare pairs cand with best task by task. Pairing takes out how hard each task is,
// which dwarfs the trial noise on most benchmarks; what is left is the noise of both
// sides, which the spread of the differences measures.
func compare(cand, best Trials, tasks []string, policy string, z float64) comparison {
	var d []float64
	for _, id := range tasks {
		c, ok1 := cand.mean(id, policy)
		b, ok2 := best.mean(id, policy)
		if ok1 && ok2 {
			d = append(d, c-b)
		}
	}
	cmp := comparison{N: len(d)}
	if len(d) == 0 {
		cmp.SE = math.Inf(1)
		cmp.Low, cmp.High = math.Inf(-1), math.Inf(1)
		return cmp
	}
	var sum float64
	for _, x := range d {
		sum += x
	}
	cmp.Delta = sum / float64(len(d))
	if len(d) < 2 {
		cmp.SE = math.Inf(1)
	} else {
		var ss float64
		for _, x := range d {
			ss += (x - cmp.Delta) * (x - cmp.Delta)
		}
		cmp.SE = math.Sqrt(ss / float64(len(d)-1) / float64(len(d)))
	}
	cmp.Low, cmp.High = cmp.Delta-z*cmp.SE, cmp.Delta+z*cmp.SE
	return cmp
}

// zFor is the one-sided normal quantile of a confidence: 1.645 for 0.95.
func zFor(confidence float64) float64 { return math.Sqrt2 * math.Erfinv(2*confidence-1) }

// decision is Step 2's answer with trials.
type decision struct {
	keep, newBest, replicated bool
	cmp                       comparison   // with the best
	cmps                      []comparison // with the best, then with each other reference
	against                   int          // with keep false: the index in cmps that rejected
	why                       string       // how the answer was reached, for the report
}

// trialRunner runs the test split's trials in a room, on pool (nil: each run a pool of its
// own): Step 2's trials, prepare's and the final score's.
type trialRunner struct {
	*Env
	rm   *cleanroom.Room
	pool *benchmark.Pool
}

// decide is the sequential paired comparison. It runs one trial of every test task per
// round, up to gate.trials.max rounds, and after each round from trials.min on stops at
// once on a clear answer: a clear loser (even the interval's top is worse than the best,
// or than another reference, by more than the margin) or a clear keep (its bottom is not,
// against every reference). Undecided after the last round, the estimates decide: kept
// when no difference is below −margin. refs[0] is the best; the others (the gated commit
// the candidate replaces) must not be lost to either.
//
// A round that gave every task the reward the round before it did adds no information (the
// benchmark behaves deterministically: more rounds cannot move the means), so from
// trials.min on it ends the rounds as the last one would.
//
// A kept candidate whose interval lies wholly above the best claims a new best; the claim
// stands only if an independent replication shows it again (see replicate), and the
// candidate's estimate then pools both. So a do-nothing change moves the best by luck only
// when two independent runs are both lucky (see the README's Decisions).
//
// more false (Step 1 failed, or the score is the tree's earlier one) runs no trial: the
// answer comes from the trials at hand.
func (tr trialRunner) decide(ctx context.Context, tasks []string, cand Trials, refs []Trials, more bool) (*decision, error) {
	g, policy := tr.Config.Gate, tr.Config.Benchmark.TimeoutPolicy
	z := zFor(g.Confidence)
	round := func(trial int) (Trials, error) {
		t := Trials{}
		return t, tr.run(ctx, tasks, trial, trial, "trial %d", scoredBy(refs...), t)
	}
	d := &decision{}
	for r := len(cand[tasks[0]]); ; r++ {
		d.cmps = compareAll(cand, refs, tasks, policy, z)
		d.cmp = d.cmps[0]
		if d.step(r, g.TrialsMin, g.Margin, g.Confidence, r >= g.TrialsMax || !more || r >= g.TrialsMin && cand.repeats(tasks)) {
			break
		}
		t, err := round(r + 1)
		if err != nil {
			return nil, err
		}
		cand.merge(t)
	}
	if !d.keep || !more || d.cmp.Low <= 0 {
		return d, nil
	}
	rep, again, err := replicate(cand, refs[0], tasks, policy, z, g.TrialsMin, g.TrialsMax, round)
	if err != nil {
		return nil, err
	}
	cand.merge(rep)
	d.replicated, d.newBest = true, again.Low > 0
	d.cmps = compareAll(cand, refs, tasks, policy, z)
	d.cmp = d.cmps[0]
	return d, nil
}

// replicate runs fresh rounds of the candidate, one at a time, until they confirm the claim
// of a new best on their own (their interval above 0 against the best) or refute it (at or
// below 0) — from trialsMin rounds on — or until a round repeats the one before it (the
// candidate's last, for the first: a benchmark behaving deterministically answers the same
// again), or trialsMax rounds. It returns the fresh rounds and their comparison.
func replicate(cand, best Trials, tasks []string, policy string, z float64, trialsMin, trialsMax int,
	round func(trial int) (Trials, error)) (Trials, comparison, error) {
	rep := Trials{}
	prev := cand.lastRound(tasks)
	var again comparison
	for i := 1; i <= trialsMax; i++ {
		t, err := round(len(cand[tasks[0]]) + i)
		if err != nil {
			return nil, again, err
		}
		rep.merge(t)
		again = compare(rep, best, tasks, policy, z)
		if i >= trialsMin && (again.Low > 0 || again.High <= 0) || sameRound(prev, t, tasks) {
			break
		}
		prev = t
	}
	return rep, again, nil
}

// repeats reports whether the last round of t gave every task the reward the one before
// it did.
func (t Trials) repeats(tasks []string) bool {
	for _, id := range tasks {
		if rs := t[id]; len(rs) < 2 || !sameReward(rs[len(rs)-2], rs[len(rs)-1]) {
			return false
		}
	}
	return true
}

// lastRound is the last trial of every task, as a round of its own.
func (t Trials) lastRound(tasks []string) Trials {
	out := Trials{}
	for _, id := range tasks {
		if rs := t[id]; len(rs) > 0 {
			out[id] = rs[len(rs)-1:]
		}
	}
	return out
}

// sameRound reports whether two one-trial rounds gave every task the same reward.
func sameRound(a, b Trials, tasks []string) bool {
	for _, id := range tasks {
		if len(a[id]) != 1 || len(b[id]) != 1 || !sameReward(a[id][0], b[id][0]) {
			return false
		}
	}
	return true
}

func sameReward(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// bestRecord is where the best's per-task test trials are kept: the receipt of the tree of
// refs/hgate/best, or baseline.json before any new best.
type bestRecord struct {
	trials  Trials
	tree    plumbing.Hash // zero when unknown (a baseline.json from before trees were noted)
	receipt *Receipt      // nil for the baseline
	base    *Baseline
}

// bestRecord finds the best's record; nil when there is none at all (a workspace prepared
// by an hgate without baseline.json and no new best since).
func (s store) bestRecord() (*bestRecord, error) {
	ref, err := s.Repo.Ref(gitguard.BestRef)
	if err != nil {
		return nil, err
	}
	if !ref.IsZero() {
		tree, err := s.Repo.TreeOf(ref)
		if err != nil {
			return nil, err
		}
		rc, err := s.receipt(tree.String())
		if err != nil || rc == nil {
			return nil, err
		}
		return &bestRecord{trials: rc.TestResults, tree: tree, receipt: rc}, nil
	}
	base, err := s.baseline()
	if err != nil || base == nil {
		return nil, err
	}
	b := &bestRecord{trials: base.Test, base: base}
	if h := plumbing.NewHash(base.Tree); base.Tree != "" && h.String() == base.Tree {
		b.tree = h
	}
	return b, nil
}

// run runs the test tasks in rm once for each trial number from first to last (on
// pool; nil gives each run a pool of its own) and adds each task's rewards to t. progress
// names a trial on the progress line, e.g. "trial %d". With scored, the null policy
// charges the candidate's nulls against the commits it is compared with (see charge).
func (tr trialRunner) run(ctx context.Context, tasks []string, first, last int, progress string, scored func(string) bool, t Trials) error {
	for trial := first; trial <= last; trial++ {
		run, err := tr.rm.Runner(tr.pool, cleanroom.Test)
		if err != nil {
			return err
		}
		out, err := runRetrying(ctx, run, benchmark.Request{Split: "test", Tasks: tasks, Trial: trial,
			Progress: tr.progressCount(fmt.Sprintf(progress, trial), len(tasks))})
		if err != nil {
			return err
		}
		results := out.Results
		if scored != nil {
			results = charge(tasks, results, scored)
		}
		t.add(tasks, results)
	}
	return nil
}

// scoreBest gives a best scored without trials (trials turned on in hgate.yaml later) its
// per-task record: trials.max rounds of the test split on the best's tree, in a room of
// its own. The record is written with the gate's other changes.
func scoreBest(ctx context.Context, e *Env, b *bestRecord, tasks []string, c changes) error {
	fmt.Fprintf(e.log(), "hgate: the best (tree %s) has no per-task test record: running %d trial(s) of the test split on it first\n",
		b.tree.String()[:7], e.Config.Gate.TrialsMax)
	rm, err := carry{e}.openVerifiedRoom(b.tree)
	if err != nil {
		return err
	}
	defer rm.Close()
	t := Trials{}
	if err := (trialRunner{e, rm, nil}).run(ctx, tasks, 1, e.Config.Gate.TrialsMax, "best, trial %d", nil, t); err != nil {
		return err
	}
	b.trials = t
	if b.receipt != nil {
		b.receipt.TestResults, b.receipt.Trials = t, e.Config.Gate.TrialsMax
		return c.add(workspace.Receipt(b.tree.String()), sealedReceipt(heldOut(e), b.receipt))
	}
	b.base.Test = t
	return c.add(workspace.Baseline, sealedBaseline(heldOut(e), b.base))
}

// finite returns [lo, hi] clipped to [0, 1], or nil when the interval is unbounded (too few tasks).
func finite(lo, hi float64) []float64 {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil
	}
	return []float64{round4(max(lo, 0)), round4(min(hi, 1))} // a val_score lies in [0, 1]
}
