package gate

import (
	"math"
	"testing"
)

func trials(rows map[string][]float64) Trials {
	t := Trials{}
	for id, rs := range rows {
		for _, r := range rs {
			t[id] = append(t[id], reward(r))
		}
	}
	return t
}

func TestCompare(t *testing.T) {
	tasks := []string{"a", "b", "c", "d"}
	best := trials(map[string][]float64{"a": {1, 1}, "b": {0, 0}, "c": {1, 0}, "d": {0, 0}})
	tests := []struct {
		name       string
		cand       Trials
		delta, se  float64
		lowAboveZ  bool
		highBelowZ bool
	}{
		{"the same rewards: no difference, no spread", trials(map[string][]float64{"a": {1}, "b": {0}, "c": {1, 0}, "d": {0}}), 0, 0, false, false},
		{"one task better", trials(map[string][]float64{"a": {1}, "b": {1}, "c": {1, 0}, "d": {0}}), 0.25, 0.25, false, false},
		{"three tasks better, none worse", trials(map[string][]float64{"a": {1}, "b": {0.5}, "c": {1}, "d": {0.5}}), 0.375, 0.125, true, false},
		{"every task worse", trials(map[string][]float64{"a": {0}, "b": {0}, "c": {0}, "d": {0}}), -0.375, 0.2394, false, false},
	}
	z := zFor(0.95)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := compare(tt.cand, best, tasks, "agent", z)
			if c.N != 4 || math.Abs(c.Delta-tt.delta) > 1e-4 || math.Abs(c.SE-tt.se) > 1e-4 {
				t.Fatalf("compare = %+v, want delta %v, se %v", c, tt.delta, tt.se)
			}
			if (c.Low > 0) != tt.lowAboveZ || (c.High < 0) != tt.highBelowZ {
				t.Fatalf("interval [%v, %v]", c.Low, c.High)
			}
		})
	}
}

func TestTrialsNullsAndFlaky(t *testing.T) {
	tr := Trials{"a": {reward(1), nil}, "b": {nil, nil}, "c": {reward(0.5), reward(0.5)}}
	tasks := []string{"a", "b", "c"}
	if s, nulls := tr.score(tasks, "agent"); s != round4((0.5+0+0.5)/3) || nulls != 2 {
		t.Errorf("agent score %v, %d nulls", s, nulls)
	}
	if s, _ := tr.score(tasks, "infra"); s != 0.75 {
		t.Errorf("infra score %v (a task with no reward is left out)", s)
	}
	if n := tr.flaky(tasks); n != 1 {
		t.Errorf("flaky = %d, want 1 (a: a reward, then null)", n)
	}
	if z := zFor(0.95); math.Abs(z-1.6449) > 1e-4 {
		t.Errorf("zFor(0.95) = %v", z)
	}
}
