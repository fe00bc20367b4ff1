package finalscore

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestTQuantile(t *testing.T) {
	for df, want := range map[int]float64{3: 3.182, 5: 2.571, 10: 2.228, 30: 2.042, 120: 1.980} {
		if got := tQuantile(df); math.Abs(got-want) > 0.005 {
			t.Errorf("t(0.975, %d) = %.4f, want %.3f", df, got, want)
		}
	}
}

// bench is a synthetic benchmark of 300 tasks whose outcomes are deterministic for a
// given program; test (120 tasks) and final (60) are two samples of one population,
// differing only by sampling.
type bench struct {
	test, final []string
}

func newBench() bench {
	b := bench{}
	for i := range 300 {
		id := fmt.Sprintf("t%03d", i)
		switch {
		case i%5 < 2:
			b.test = append(b.test, id)
		case i%5 == 2:
			b.final = append(b.final, id)
		}
	}
	return b
}

// program is which tasks a version of the code passes.
type program map[string]float64

func baseProgram(rng *rand.Rand) program {
	p := program{}
	for i := range 300 {
		p[fmt.Sprintf("t%03d", i)] = float64(rng.IntN(5) / 3) // 40% pass
	}
	return p
}

// change is an edit that helps nothing overall: it breaks five passing tasks and fixes
// five failing ones, chosen at random among all 300.
func (p program) change(rng *rand.Rand) program {
	q := program{}
	for k, v := range p {
		q[k] = v
	}
	for _, from := range []float64{1, 0} {
		for flipped := 0; flipped < 5; {
			if id := fmt.Sprintf("t%03d", rng.IntN(300)); q[id] == from && p[id] == from {
				q[id] = 1 - from
				flipped++
			}
		}
	}
	return q
}

// fix is an honest improvement: it makes a quarter of the failing tasks pass, wherever
// they are. The tasks are visited in order, not in the map's random order, so that a seed
// always draws the same fix.
func (p program) fix(rng *rand.Rand) program {
	q := program{}
	for _, k := range slices.Sorted(maps.Keys(p)) {
		q[k] = p[k]
		if p[k] == 0 && rng.IntN(4) == 0 {
			q[k] = 1
		}
	}
	return q
}

func (p program) rewards() map[string][]*float64 {
	out := map[string][]*float64{}
	for k, v := range p {
		out[k] = []*float64{&v}
	}
	return out
}

func score(p program, tasks []string) float64 {
	sum := 0.0
	for _, id := range tasks {
		sum += p[id]
	}
	return sum / float64(len(tasks))
}

// TestSelectionOnTestShowsAsGap: an agent that keeps whatever scores higher on the test
// split, over many changes that improve nothing, buys a val gain the final split does
// not confirm: the gap's interval excludes zero. An honest agent's real improvement
// shows the same gain on both: its final gain excludes zero and the gap's interval
// holds it. Twenty seeded runs: selection must show in at least 19, the honest gap
// hold zero in at least 17 (a 95% interval misses one time in twenty).
func TestSelectionOnTestShowsAsGap(t *testing.T) {
	b := newBench()
	selected, honest := 0, 0
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		base := baseProgram(rng)
		best := base
		for range 200 {
			if cand := best.change(rng); score(cand, b.test) > score(best, b.test) {
				best = cand
			}
		}
		val, final := Gain(best.rewards(), base.rewards(), b.test), Gain(best.rewards(), base.rewards(), b.final)
		if gap := Gap(val, final); !gap.Holds(0) && gap.Mean > 0 {
			selected++
		} else {
			t.Logf("seed %d, selection: val %v, final %v, gap %v", seed, val, final, gap)
		}
		fixed := base.fix(rng)
		val, final = Gain(fixed.rewards(), base.rewards(), b.test), Gain(fixed.rewards(), base.rewards(), b.final)
		if gap := Gap(val, final); gap.Holds(0) && !final.Holds(0) {
			honest++
		} else {
			t.Logf("seed %d, honest: val %v, final %v, gap %v", seed, val, final, gap)
		}
	}
	if selected < 19 || honest < 17 {
		t.Fatalf("selection showed as a gap in %d of 20 runs (want ≥ 19); the honest gap held zero in %d (want ≥ 17)", selected, honest)
	}
}

// TestIntervalJSON: an interval over one task (unbounded) is written with null ends and
// read back unbounded; a bounded one round-trips.
func TestIntervalJSON(t *testing.T) {
	one := 1.0
	for _, in := range []Interval{interval([]float64{0.5}), Gain(map[string][]*float64{"a": {&one}, "b": {&one}}, map[string][]*float64{"a": {nil}, "b": {&one}}, []string{"a", "b"})} {
		data, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		var out Interval
		if err := json.Unmarshal(data, &out); err != nil || out != in {
			t.Fatalf("%s read back as %+v (%v), want %+v", data, out, err, in)
		}
	}
	if data, _ := json.Marshal(interval([]float64{0.5})); string(data) != `{"mean":0.5,"low":null,"high":null,"se":null,"n":1}` {
		t.Fatalf("one task: %s", data)
	}
}
