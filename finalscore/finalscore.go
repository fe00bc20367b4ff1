// Package finalscore measures how much a run's best fitted the held-out split by being
// chosen on it: the best's gain over the baseline on the sealed final split, which no
// gate, agent or bench ever scored, with its 95% interval, and the gap between the gain
// the gate saw (on the test split, where the best was chosen) and that final gain.
package finalscore

import (
	"encoding/json"
	"fmt"
	"math"
)

// Interval is an estimate with its 95% interval.
type Interval struct {
	Mean float64 `json:"mean"`
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	SE   float64 `json:"se"`
	N    int     `json:"n"` // tasks
}

// Holds reports whether zero lies in the interval.
func (i Interval) Holds(x float64) bool { return i.Low <= x && x <= i.High }

func (i Interval) String() string {
	return fmt.Sprintf("%+.4f [%+.4f, %+.4f]", i.Mean, i.Low, i.High)
}

// Gain is the paired gain of best over base on tasks: the mean over tasks of the
// difference of each task's mean reward (a null reward counts 0), with a t interval.
// A task missing from either side is left out.
func Gain(best, base map[string][]*float64, tasks []string) Interval {
	var d []float64
	for _, id := range tasks {
		b, okB := mean(best[id])
		a, okA := mean(base[id])
		if okA && okB {
			d = append(d, b-a)
		}
	}
	return interval(d)
}

// Gap is val − final: what the gain seen where the best was chosen exceeds the gain on
// tasks nobody looked at. The two sets of tasks are disjoint, so their errors add.
func Gap(val, final Interval) Interval {
	se := math.Hypot(val.SE, final.SE)
	n := min(val.N, final.N)
	m := val.Mean - final.Mean
	h := tQuantile(n-1) * se
	return Interval{Mean: m, Low: m - h, High: m + h, SE: se, N: n}
}

func mean(rs []*float64) (float64, bool) {
	if len(rs) == 0 {
		return 0, false
	}
	s := 0.0
	for _, r := range rs {
		if r != nil && !math.IsNaN(*r) {
			s += *r
		}
	}
	return s / float64(len(rs)), true
}

func interval(d []float64) Interval {
	n := len(d)
	if n == 0 {
		return Interval{}
	}
	m := 0.0
	for _, x := range d {
		m += x
	}
	m /= float64(n)
	if n == 1 {
		return Interval{Mean: m, Low: math.Inf(-1), High: math.Inf(1), SE: math.Inf(1), N: 1}
	}
	v := 0.0
	for _, x := range d {
		v += (x - m) * (x - m)
	}
	se := math.Sqrt(v / float64(n-1) / float64(n))
	h := tQuantile(n-1) * se
	return Interval{Mean: m, Low: m - h, High: m + h, SE: se, N: n}
}

// tQuantile is Student's t 0.975 quantile for df degrees of freedom (Hill's 1970
// expansion in the normal quantile; within 0.1% for df ≥ 3, and 1.96 as df grows).
func tQuantile(df int) float64 {
	switch {
	case df <= 0:
		return math.Inf(1)
	case df == 1:
		return 12.706
	case df == 2:
		return 4.303
	}
	z := 1.959963984540054
	n := float64(df)
	z3, z5, z7, z9 := math.Pow(z, 3), math.Pow(z, 5), math.Pow(z, 7), math.Pow(z, 9)
	return z + (z3+z)/(4*n) + (5*z5+16*z3+3*z)/(96*n*n) +
		(3*z7+19*z5+17*z3-15*z)/(384*n*n*n) + (79*z9+776*z7+1482*z5-1920*z3-945*z)/(92160*n*n*n*n)
}

// MarshalJSON writes an unbounded end (one task: no spread to bound it) as null, which
// encoding/json cannot write as a number.
func (i Interval) MarshalJSON() ([]byte, error) {
	num := func(x float64) *float64 {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		Mean float64  `json:"mean"`
		Low  *float64 `json:"low"`
		High *float64 `json:"high"`
		SE   *float64 `json:"se"`
		N    int      `json:"n"`
	}{i.Mean, num(i.Low), num(i.High), num(i.SE), i.N})
}

// UnmarshalJSON reads what MarshalJSON wrote, a null end as unbounded.
func (i *Interval) UnmarshalJSON(data []byte) error {
	var v struct {
		Mean          float64
		Low, High, SE *float64
		N             int
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	or := func(p *float64, x float64) float64 {
		if p == nil {
			return x
		}
		return *p
	}
	*i = Interval{Mean: v.Mean, Low: or(v.Low, math.Inf(-1)), High: or(v.High, math.Inf(1)), SE: or(v.SE, math.Inf(1)), N: v.N}
	return nil
}
