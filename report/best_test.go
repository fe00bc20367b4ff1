package report

import "testing"

func TestBestSteps(t *testing.T) {
	tests := []struct {
		name     string
		attempts []Attempt
		want     []float64
	}{
		{"without trials: every kept attempt above the best moves it", []Attempt{
			{Kept: true, ValScore: 0.6}, {Verdict: "pass", ValScore: 0.9}, {Kept: true, ValScore: 0.55}},
			[]float64{0.5, 0.6, 0.6, 0.6}},
		{"with trials: only a confirmed new best moves it", []Attempt{
			{Kept: true, ValScore: 0.6, Trials: 4}, {Kept: true, ValScore: 0.7, Trials: 8, NewBest: true}},
			[]float64{0.5, 0.5, 0.7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bestSteps(0.5, tt.attempts)
			if len(got) != len(tt.want) {
				t.Fatalf("bestSteps = %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("bestSteps = %v, want %v", got, tt.want)
				}
			}
		})
	}
}
