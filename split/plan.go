package split

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/hgate/hgate/suite"
)

// Plan is how a new split is made: the shares of the test and final splits, the seed,
// and the labels to stratify by (besides the baseline's pass or fail).
type Plan struct {
	TestFraction  float64
	FinalFraction float64 // carved from what would have been train
	// MinFinal is the fewest tasks a final split may hold; a smaller one is not made
	// (Made.FinalNote says why).
	MinFinal int
	Seed     int64
	// Labels maps a task to its labels (key → value); Stratify names the keys used.
	Labels   map[string]map[string]string
	Stratify []string
}

// Made is a split made by a plan, with what it left out and why it has no final split.
type Made struct {
	Split     *Split
	Excluded  []string // null at baseline, sorted
	FinalNote string   // why there is no final split, when the plan asked for one
}

// MakePlan splits a baseline run by plan. Without a final share or labels it is Make,
// bit for bit. Otherwise each stratum (pass or fail × each stratify label's value) is
// shuffled, and the test and final splits take their shares of the whole by largest
// remainder over the strata, so that each split holds every stratum in proportion.
func MakePlan(baseline map[string]*float64, p Plan) Made {
	finalShare := clamp(p.FinalFraction)
	if finalShare == 0 && len(p.Stratify) == 0 {
		s, ex := Make(baseline, p.TestFraction, p.Seed)
		return Made{Split: s, Excluded: ex}
	}
	strata, excluded := stratify(baseline, p.Labels, p.Stratify)
	rng := rand.New(rand.NewPCG(uint64(p.Seed), uint64(p.Seed)))
	for _, ids := range strata {
		rng.Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
	}
	total := 0
	for _, ids := range strata {
		total += len(ids)
	}
	test := shares(strata, clamp(p.TestFraction))
	final := shares(strata, finalShare)
	note := ""
	if n := sum(final); finalShare > 0 && n < max(p.MinFinal, 1) {
		final = make([]int, len(strata))
		note = "no final split: " + tooFew(n, total, p.MinFinal)
		if len(p.Stratify) == 0 {
			// Nothing else asked for the strata: the split is Make's, bit for bit, so a
			// workspace too small for a final split is split as before there was one.
			s, ex := Make(baseline, p.TestFraction, p.Seed)
			return Made{Split: s, Excluded: ex, FinalNote: note}
		}
	}
	s := &Split{Seed: p.Seed, Train: []string{}, Test: []string{}, Stratify: p.Stratify}
	for i, ids := range strata {
		t := min(test[i], len(ids))
		f := min(final[i], len(ids)-t)
		s.Test = append(s.Test, ids[:t]...)
		s.Final = append(s.Final, ids[t:t+f]...)
		s.Train = append(s.Train, ids[t+f:]...)
	}
	slices.Sort(s.Train)
	slices.Sort(s.Test)
	slices.Sort(s.Final)
	return Made{Split: s, Excluded: excluded, FinalNote: note}
}

// tooFew says why a final split of n of total tasks is not made.
func tooFew(n, total, minFinal int) string {
	return fmt.Sprintf("%d of %d tasks would hold it, fewer than the %d it needs", n, total, max(minFinal, 1))
}

// TooFewForFinal says why a split of total tasks (those with a baseline reward) gets no
// final split at share f, as MakePlan would: "" when it would get one, or f asks for none.
// The share's count is the same however the tasks are stratified (shares' total).
func TooFewForFinal(total int, f float64, minFinal int) string {
	n := int(math.Round(clamp(f) * float64(total)))
	if clamp(f) == 0 || n >= max(minFinal, 1) {
		return ""
	}
	return tooFew(n, total, minFinal)
}

// stratify groups the tasks with a baseline reward by (pass or fail, label values),
// each group sorted by id, the groups in the order of their keys.
func stratify(baseline map[string]*float64, labels map[string]map[string]string, keys []string) ([][]string, []string) {
	groups := map[string][]string{}
	var excluded []string
	for _, id := range slices.Sorted(maps.Keys(baseline)) {
		r := baseline[id]
		if r == nil {
			excluded = append(excluded, id)
			continue
		}
		k := "fail"
		if suite.Passed(r) {
			k = "pass"
		}
		for _, key := range keys {
			k += "\x00" + labels[id][key]
		}
		groups[k] = append(groups[k], id)
	}
	var strata [][]string
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		strata = append(strata, groups[k])
	}
	return strata, excluded
}

// shares is how many tasks of each stratum a split of share f takes: the whole's count
// rounded half away from zero, given out as floors and then by largest remainder (ties
// to the larger stratum, then the first).
func shares(strata [][]string, f float64) []int {
	total := 0
	for _, ids := range strata {
		total += len(ids)
	}
	want := int(math.Round(f * float64(total)))
	take := make([]int, len(strata))
	type rem struct {
		i    int
		frac float64
	}
	var rems []rem
	given := 0
	for i, ids := range strata {
		q := f * float64(len(ids))
		take[i] = int(math.Floor(q))
		given += take[i]
		rems = append(rems, rem{i, q - math.Floor(q)})
	}
	slices.SortStableFunc(rems, func(a, b rem) int {
		if a.frac != b.frac {
			return cmpFloat(b.frac, a.frac)
		}
		return len(strata[b.i]) - len(strata[a.i])
	})
	for j := 0; given < want && j < len(rems); j++ {
		take[rems[j].i]++
		given++
	}
	return take
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func clamp(f float64) float64 {
	if !(f > 0) {
		return 0
	}
	return math.Min(f, 1)
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// LabelKey is how a stratum is named in a report: its labels' values joined, "" for a
// task without them.
func LabelKey(labels map[string]string, keys []string) string {
	var vs []string
	for _, k := range keys {
		vs = append(vs, k+"="+labels[k])
	}
	return strings.Join(vs, ",")
}
