package gate

import (
	"testing"

	"github.com/hgate/hgate/record"
)

func TestBestOf(t *testing.T) {
	rows := []record.Row{{ValScore: 0.5}, {ValScore: 0.75}, {ValScore: 0.6}}
	test := []string{"a", "b"}
	tests := []struct {
		name     string
		rows     []record.Row
		trials   Trials
		want     float64
		interval bool
		ok       bool
	}{
		{"before prepare", nil, nil, 0, false, false},
		{"without trials: the highest row, where refs/hgate/best stands", rows, nil, 0.75, false, true},
		{"with trials: the best's estimate, not a higher row that was never confirmed", rows,
			Trials{"a": {reward(1), reward(1)}, "b": {reward(0), reward(0)}}, 0.5, true, true},
		{"one trial each: no spread to measure", rows, Trials{"a": {reward(1)}, "b": {reward(0)}}, 0.5, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, ok := bestOf(tt.rows, tt.trials, test, "agent", 0.95)
			if ok != tt.ok || b.ValScore != tt.want || (b.Interval != nil) != tt.interval {
				t.Fatalf("bestOf = %+v, %v; want %v (interval %v), %v", b, ok, tt.want, tt.interval, tt.ok)
			}
		})
	}
	// A deterministic best's interval is the point itself; a noisy one's is wider.
	b, _ := bestOf(rows, Trials{"a": {reward(1), reward(0)}, "b": {reward(0), reward(0)}}, test, "agent", 0.95)
	if b.Interval[0] >= b.ValScore || b.Interval[1] <= b.ValScore {
		t.Errorf("noisy best %v, interval %v", b.ValScore, b.Interval)
	}
}
