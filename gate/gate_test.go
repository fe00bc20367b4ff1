package gate

import (
	"slices"
	"testing"

	"github.com/hgate/hgate/benchmark"
)

func reward(x float64) *float64 { return &x }

func TestValScore(t *testing.T) {
	results := map[string]benchmark.Result{
		"a": {Task: "a", Reward: reward(1)},
		"b": {Task: "b", Reward: reward(0.5)},
		"c": {Task: "c"}, // null
	}
	tests := []struct {
		name      string
		tasks     []string
		policy    string
		want      float64
		wantNulls int
	}{
		{"agent counts null as zero", []string{"a", "b", "c"}, "agent", 0.5, 1},
		{"infra leaves null out", []string{"a", "b", "c"}, "infra", 0.75, 1},
		{"a task with no result is null", []string{"a", "missing"}, "agent", 0.5, 1},
		{"infra with only nulls scores zero", []string{"c"}, "infra", 0, 1},
		{"no tasks", nil, "agent", 0, 0},
		{"rounded to four decimals", []string{"a", "a", "c"}, "agent", 0.6667, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, nulls := valScore(tt.tasks, results, tt.policy)
			if got != tt.want || nulls != tt.wantNulls {
				t.Fatalf("valScore = %v, %d nulls; want %v, %d", got, nulls, tt.want, tt.wantNulls)
			}
		})
	}
}

func TestNeededToPass(t *testing.T) {
	tests := []struct {
		threshold float64
		total     int
		want      int
	}{
		{0.8, 10, 8}, {0.8, 12, 10}, {0.8, 1, 1}, {0, 5, 0}, {1, 3, 3}, {0.7, 10, 7}, {0.8, 0, 0},
	}
	for _, tt := range tests {
		if got := neededToPass(tt.threshold, tt.total); got != tt.want {
			t.Errorf("neededToPass(%v, %d) = %d, want %d", tt.threshold, tt.total, got, tt.want)
		}
	}
}

// TestRejectionCertain checks the --fail-fast rule: stop only when no outcome of the
// remaining tasks can save the verdict.
func TestRejectionCertain(t *testing.T) {
	tests := []struct {
		name string
		d    *decider
		want bool
	}{
		{"suite can still pass", &decider{suiteTotal: 10, needed: 8, suiteFailed: 2}, false},
		{"suite cannot pass", &decider{suiteTotal: 10, needed: 8, suiteFailed: 3}, true},
		{"no best on record: step 2 always passes", &decider{testTotal: 4, testDone: 4}, false},
		{"test can still reach the best", &decider{testTotal: 4, testDone: 2, testCounted: 2, testSum: 1, best: 0.75, hasBest: true}, false},
		{"test cannot reach the best", &decider{testTotal: 4, testDone: 2, testCounted: 2, testSum: 0, best: 0.75, hasBest: true}, true},
		{"exactly the best is enough", &decider{testTotal: 4, testDone: 4, testCounted: 4, testSum: 3, best: 0.75, hasBest: true}, false},
		{"infra: nulls leave the denominator", &decider{policy: "infra", testTotal: 4, testDone: 2, testCounted: 0, best: 1, hasBest: true}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.rejectionCertain(); got != tt.want {
				t.Fatalf("rejectionCertain = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPromotionCandidates(t *testing.T) {
	train := map[string]*float64{"a": reward(0), "b": reward(1), "c": nil, "t1": reward(0)}
	split := []string{"a", "b", "c", "d"}
	tests := []struct {
		name  string
		base  *Baseline
		suite []string
		want  []string
	}{
		{"the baseline record, not train_results", &Baseline{TrainFailing: []string{"b", "d"}}, nil, []string{"b", "d"}},
		{"suite tasks are not candidates", &Baseline{TrainFailing: []string{"b", "d"}}, []string{"d"}, []string{"b"}},
		{"a test id in the record is dropped", &Baseline{TrainFailing: []string{"t1", "d"}}, nil, []string{"d"}},
		{"no record: train_results stands in, test ids dropped", nil, []string{"c"}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := promotionCandidates(tt.base, train, tt.suite, split)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("promotionCandidates = %q, want %q", got, tt.want)
			}
		})
	}
}
