package gate

import (
	"math"
	"testing"
)

func TestDecisionStep(t *testing.T) {
	inf := math.Inf(1)
	cmp := func(delta, low, high float64) comparison { return comparison{N: 4, Delta: delta, Low: low, High: high} }
	tests := []struct {
		name       string
		cmps       []comparison
		r          int
		last       bool
		done, keep bool
		against    int
	}{
		{"before trials.min nothing is decided", []comparison{cmp(-1, -1, -0.9)}, 1, false, false, false, 0},
		{"a clear keep against the best alone", []comparison{cmp(0, 0, 0)}, 2, false, true, true, 0},
		{"a clear keep must be one against the gated commit too", []comparison{cmp(0, 0, 0), cmp(-0.17, -0.44, 0.1)}, 2, false, false, false, 0},
		{"a clear loser against the gated commit rejects at once", []comparison{cmp(0, 0, 0), cmp(-0.5, -0.6, -0.4)}, 2, false, true, false, 1},
		{"undecided at the last round: the gated commit's estimate rejects", []comparison{cmp(0, 0, 0), cmp(-0.17, -0.44, 0.1)}, 8, true, true, false, 1},
		{"undecided at the last round: within the margin of both", []comparison{cmp(0.01, -0.2, 0.2), cmp(-0.02, -0.3, 0.2)}, 8, true, true, true, 0},
		{"no pair to compare is no clear answer", []comparison{{SE: inf, Low: -inf, High: inf}}, 2, false, false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &decision{cmps: tt.cmps}
			done := d.step(tt.r, 2, 0.025, 0.95, tt.last)
			if done != tt.done || done && (d.keep != tt.keep || !d.keep && d.against != tt.against) {
				t.Fatalf("step = %v keep %v against %d, want %v keep %v against %d", done, d.keep, d.against, tt.done, tt.keep, tt.against)
			}
		})
	}
}

func TestNotWorse(t *testing.T) {
	tests := []struct {
		name    string
		score   float64
		refs    []float64
		ok      bool
		against int
	}{
		{"at the best, no other reference", 0.5, nil, true, -1},
		{"below the best", 0.4, nil, false, -1},
		{"at the best, below the gated commit", 0.5, []float64{0.6}, false, 0},
		{"above both", 0.7, []float64{0.6}, true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, against := notWorse(tt.score, 0.5, true, tt.refs)
			if ok != tt.ok || against != tt.against {
				t.Fatalf("notWorse = %v, %d; want %v, %d", ok, against, tt.ok, tt.against)
			}
		})
	}
}

func TestReplicate(t *testing.T) {
	tasks := []string{"a", "b", "c", "d"}
	best := trials(map[string][]float64{"a": {0, 0}, "b": {0, 0}, "c": {1, 1}, "d": {0, 0}})
	cand := trials(map[string][]float64{"a": {1, 1}, "b": {1, 1}, "c": {1, 1}, "d": {0, 0}})
	z := zFor(0.95)
	tests := []struct {
		name   string
		rounds []map[string]float64 // the fresh rounds replicate is given, in order
		ran    int
		newB   bool
	}{
		{"a deterministic benchmark: the first fresh round repeats the candidate's last", []map[string]float64{
			{"a": 1, "b": 1, "c": 1, "d": 0}}, 1, true},
		{"a noisy one: confirmed as soon as the fresh rounds show it on their own", []map[string]float64{
			{"a": 1, "b": 0, "c": 1, "d": 0}, {"a": 1, "b": 1, "c": 1, "d": 1}, {"a": 1, "b": 1, "c": 1, "d": 0}}, 2, true},
		{"refuted: the fresh rounds are no better than the best", []map[string]float64{
			{"a": 0, "b": 0, "c": 1, "d": 0}, {"a": 0, "b": 0, "c": 1, "d": 0}}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ran := 0
			round := func(int) (Trials, error) {
				r := Trials{}
				for id, v := range tt.rounds[ran] {
					r[id] = []*float64{reward(v)}
				}
				ran++
				return r, nil
			}
			rep, again, err := replicate(cand, best, tasks, "agent", z, 2, 8, round)
			if err != nil || ran != tt.ran || len(rep["a"]) != tt.ran || (again.Low > 0) != tt.newB {
				t.Fatalf("replicate ran %d round(s) (want %d), new best %v (want %v), %v", ran, tt.ran, again.Low > 0, tt.newB, err)
			}
		})
	}
}

func TestRepeats(t *testing.T) {
	tasks := []string{"a", "b"}
	for _, tt := range []struct {
		name string
		t    Trials
		want bool
	}{
		{"one round", Trials{"a": {reward(1)}, "b": {nil}}, false},
		{"the last round as the one before, nulls included", Trials{"a": {reward(0), reward(1), reward(1)}, "b": {nil, nil, nil}}, true},
		{"one task differs", Trials{"a": {reward(1), reward(1)}, "b": {reward(0), nil}}, false},
	} {
		if got := tt.t.repeats(tasks); got != tt.want {
			t.Errorf("%s: repeats = %v", tt.name, got)
		}
	}
}
