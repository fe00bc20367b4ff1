package gate

import (
	"testing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/suite"
)

// TestLabelScoresPoolRareValues: each label value's tasks are scored per split; values
// with fewer than PoolBelow tasks over all splits share one pooled row, so that no row
// speaks of one or two held-out tasks.
func TestLabelScoresPoolRareValues(t *testing.T) {
	one, zero := 1.0, 0.0
	l := benchmark.Labels{}
	train := &suite.TrainResults{Results: map[string]*float64{}}
	test := splitTrials{best: Trials{}, base: Trials{}}
	final := splitTrials{best: Trials{}, base: Trials{}}
	for i, id := range []string{"a0", "a1", "a2", "a3", "a4", "a5", "b0", "b1", "c0"} {
		cat := id[:1]
		l[id] = map[string]string{"category": cat}
		switch i % 3 {
		case 0:
			train.Results[id] = &one
		case 1:
			test.tasks = append(test.tasks, id)
			test.best[id], test.base[id] = []*float64{&one}, []*float64{&zero}
		case 2:
			final.tasks = append(final.tasks, id)
			final.best[id], final.base[id] = []*float64{&zero, &one}, []*float64{&zero}
		}
	}
	got := labelScores(l, train, test, final)
	if len(got) != 2 || got[0].Value != Pooled || got[1].Value != "a" {
		t.Fatalf("rows %+v: want the pooled row (b, c: 3 tasks) and a", got)
	}
	a := got[1]
	if a.Train.Tasks != 2 || a.Test.Tasks != 2 || a.Final.Tasks != 2 {
		t.Fatalf("a's tasks per split %d/%d/%d, want 2/2/2", a.Train.Tasks, a.Test.Tasks, a.Final.Tasks)
	}
	if *a.Test.Best != 1 || *a.Test.Baseline != 0 || *a.Final.Best != 0.5 || a.Train.Baseline != nil {
		t.Fatalf("a's scores %+v", a)
	}
	if p := got[0]; p.Train.Tasks+p.Test.Tasks+p.Final.Tasks != 3 {
		t.Fatalf("the pooled row holds %+v, want the 3 tasks of b and c", p)
	}
}
