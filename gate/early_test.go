package gate

import (
	"math/rand/v2"
	"testing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/split"
)

func rewarded(v float64) benchmark.Result { return benchmark.Result{Reward: &v} }

// TestStep3StartsWhenCertain: the decider starts Step 3's first run once, at the first
// result after which Steps 1 and 2 cannot fail, and never while one still could.
func TestStep3StartsWhenCertain(t *testing.T) {
	type ev struct {
		kind string // suite, guard, test
		task string
		r    benchmark.Result
	}
	pass, fail := rewarded(1), rewarded(0)
	infra := benchmark.Result{Null: benchmark.NullInfra}
	base := []ev{{"guard", "g", pass}, {"suite", "s1", pass}, {"suite", "s2", pass}, {"test", "a", pass}, {"test", "b", pass}, {"test", "c", fail}}
	tests := []struct {
		name    string
		events  []ev
		gated   float64 // a second reference's score; 0: none
		pending bool
		wantAt  int // the event after which it starts, from 1; 0: never
	}{
		{name: "when b makes 2/3 certain", events: base, wantAt: 5},
		{name: "a guarded task failed", events: append([]ev{{"guard", "g", fail}}, base[1:]...)},
		{name: "a suite task failed", events: append(base[:2:2], append([]ev{{"suite", "s2", fail}}, base[3:]...)...)},
		{name: "an infra null is run again", events: append(base[:4:4], ev{"test", "b", infra}, ev{"test", "c", fail}), wantAt: 0},
		{name: "the gated commit scored higher", events: base, gated: 0.9},
		{name: "pending: Step 2 deferred", events: base[:3], pending: true, wantAt: 3},
		{name: "test split first, guard last", events: []ev{base[3], base[4], base[1], base[2], base[0]}, wantAt: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &inputs{sp: &split.Split{Test: []string{"a", "b", "c"}}, best: 0.6667, hasBest: true, pending: tt.pending}
			if tt.gated > 0 {
				in.gated = &reference{score: tt.gated}
			}
			d := &decider{suiteTotal: 2, needed: 2, testTotal: 3, best: in.best, hasBest: !tt.pending}
			started := 0
			d.onCertain, d.guardTotal = func() { started++ }, 1
			d.testResults, d.step2Certain = map[string]benchmark.Result{}, in.step2Certain("agent")
			at := 0
			for i, e := range tt.events {
				e.r.Task = e.task
				map[string]func(int, int, benchmark.Result){"suite": d.onSuite, "guard": d.onGuard, "test": d.onTest}[e.kind](0, 0, e.r)
				if started > 0 && at == 0 {
					at = i + 1
				}
			}
			if at != tt.wantAt || started > 1 {
				t.Errorf("started after event %d (%d times), want %d", at, started, tt.wantAt)
			}
		})
	}
}

// TestMinTestScoreIsABound: whatever the tasks not done yet return (a reward, a null the
// code caused, an infrastructure null), Step 2's score is at least minTestScore of the
// tasks done, under both timeout policies, pooled or not.
func TestMinTestScoreIsABound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	test := []string{"a", "b", "c", "d", "e"}
	result := func(id string) benchmark.Result {
		switch rng.IntN(5) {
		case 0:
			return benchmark.Result{Task: id, Null: benchmark.NullCode}
		case 1:
			return benchmark.Result{Task: id, Null: benchmark.NullInfra}
		default:
			r := rewarded(float64(rng.IntN(3)) / 2)
			r.Task = id
			return r
		}
	}
	for i := range 2000 {
		policy := []string{"agent", "infra"}[i%2]
		in := &inputs{sp: &split.Split{Test: test}}
		if i%4 >= 2 {
			in.pooled = true
			in.prior = &Receipt{TestResults: Trials{}}
			in.prior.TestResults.add(test, map[string]benchmark.Result{"a": rewarded(1), "b": rewarded(0), "c": rewarded(1), "d": rewarded(0.5), "e": rewarded(1)})
		}
		all, done := map[string]benchmark.Result{}, map[string]benchmark.Result{}
		for _, id := range test {
			all[id] = result(id)
			if rng.IntN(2) == 0 {
				done[id] = all[id]
			}
		}
		low, _ := in.minTestScore(done, policy)
		charged := charge(test, all, scoredBy(in.refs()...))
		final, _ := valScore(test, charged, policy)
		if in.pooled {
			tr := Trials{}
			tr.merge(in.prior.TestResults)
			tr.add(test, charged)
			final, _ = tr.score(test, policy)
		}
		if final < low {
			t.Fatalf("case %d (%s, pooled %v): score %.4f below the bound %.4f; done %v, all %v", i, policy, in.pooled, final, low, done, all)
		}
	}
}
