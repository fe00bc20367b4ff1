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
