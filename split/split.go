// Package split owns split.json, the train/test split that prepare makes
// once from the baseline run. The agent sees train tasks only; the gate's
// Step 2 scores the test split.
//
// Make stratifies by baseline outcome: the passing and the failing tasks are
// each shuffled and a test_fraction of each goes to test, so both splits see
// the same mix of easy and hard tasks. Tasks whose baseline reward is null
// (timed out, crashed) cannot be placed in a stratum and are left out.
//
// The shuffle is math/rand/v2's PCG seeded with (seed, seed), walking the
// failing stratum first, then the passing one, each sorted by id before the
// shuffle. It is stable across hgate versions for a given seed; it does not
// reproduce auto-harness's Python random module, and need not: the split is
// made once and then read from split.json.
package split

//lint:file-ignore SA5008 `required` is internal/statefile's own json tag option (the key must be present), which encoding/json ignores

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/suite"
)

// Split is split.json.
type Split struct {
	Seed  int64    `json:"seed,required"`
	Train []string `json:"train,required"` // sorted
	Test  []string `json:"test,required"`  // sorted
	// Final is the sealed final split (sorted): scored only for the user, never by a
	// gate, an agent or hgate bench. Absent in workspaces made without one.
	Final []string `json:"final,omitempty"`
	// FinalSHA names the sealed record of the final split (gate/final.go): the keyed
	// digest of the baseline's final trials, whose keys are the final ids. prepare writes
	// this, never the ids, which keeps the split's scores out of the workspace; the ids are
	// still every task less Train, Test and those left out (conceded, threat model).
	// FinalTasks is how many there are.
	FinalSHA   string `json:"final_sha,omitempty"`
	FinalTasks int    `json:"final_tasks,omitempty"`
	// Stratify names the labels the split was stratified by, besides the baseline's
	// pass or fail.
	Stratify []string `json:"stratify,omitempty"`
}

// Make splits the tasks of a baseline run. testFraction (clamped to [0, 1])
// of each stratum, rounded half away from zero, goes to test. When there are
// at least two tasks, each split gets at least one: a task moves from the
// larger stratum if rounding left a split empty. Tasks with a null baseline
// are returned in excluded, sorted.
func Make(baseline map[string]*float64, testFraction float64, seed int64) (s *Split, excluded []string) {
	var pass, fail []string
	for _, id := range slices.Sorted(maps.Keys(baseline)) {
		switch r := baseline[id]; {
		case r == nil:
			excluded = append(excluded, id)
		case suite.Passed(r):
			pass = append(pass, id)
		default:
			fail = append(fail, id)
		}
	}
	switch {
	case !(testFraction > 0): // NaN too
		testFraction = 0
	case testFraction > 1:
		testFraction = 1
	}

	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)))
	strata := [][]string{fail, pass}
	take := make([]int, len(strata))
	total, inTest := 0, 0
	for i, ids := range strata {
		rng.Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
		take[i] = int(math.Round(testFraction * float64(len(ids))))
		total += len(ids)
		inTest += take[i]
	}
	larger := 0
	if len(pass) > len(fail) {
		larger = 1
	}
	if total >= 2 {
		switch inTest {
		case 0:
			take[larger]++
		case total:
			take[larger]--
		}
	}

	s = &Split{Seed: seed, Train: []string{}, Test: []string{}}
	for i, ids := range strata {
		s.Test = append(s.Test, ids[:take[i]]...)
		s.Train = append(s.Train, ids[take[i]:]...)
	}
	slices.Sort(s.Test)
	slices.Sort(s.Train)
	return s, excluded
}

// Load reads and validates split.json. A missing file is an error wrapping
// fs.ErrNotExist.
func Load(path string) (*Split, error) {
	return statefile.Load(path, "split", Parse)
}

// Parse decodes and validates the content of split.json: valid task ids,
// none listed twice, none in both splits. The lists come back sorted.
func Parse(file string, data []byte) (*Split, error) {
	var s Split
	if err := statefile.DecodeJSON(file, data, &s); err != nil {
		return nil, err
	}
	if err := statefile.Located(file, data, s.problems()); err != nil {
		return nil, err
	}
	slices.Sort(s.Train)
	slices.Sort(s.Test)
	slices.Sort(s.Final)
	return &s, nil
}

// Marshal returns the bytes of split.json, both lists sorted; a split that
// Parse would refuse is an error, one line per problem.
func (s *Split) Marshal() ([]byte, error) {
	if err := statefile.Unplaced(s.problems()); err != nil {
		return nil, err
	}
	out := Split{Seed: s.Seed, Train: slices.Sorted(slices.Values(s.Train)), Test: slices.Sorted(slices.Values(s.Test)), Stratify: s.Stratify,
		FinalSHA: s.FinalSHA, FinalTasks: s.FinalTasks}
	if len(s.Final) > 0 {
		out.Final = slices.Sorted(slices.Values(s.Final))
	}
	return statefile.EncodeJSON(&out)
}

func (s *Split) problems() []statefile.Problem {
	var probs []statefile.Problem
	type place struct {
		key   string
		index int
	}
	first := map[string]place{}
	for _, list := range []struct {
		key string
		ids []string
	}{{"train", s.Train}, {"test", s.Test}, {"final", s.Final}} {
		for i, id := range list.ids {
			at, field := []string{list.key, strconv.Itoa(i)}, fmt.Sprintf("%s[%d]", list.key, i)
			if msg := statefile.TaskIDProblem(id); msg != "" {
				probs = append(probs, statefile.Problem{At: at, Field: field, Msg: msg})
				continue
			}
			prev, dup := first[id]
			switch {
			case dup && prev.key == list.key:
				probs = append(probs, statefile.Problem{At: at, Field: field, Msg: fmt.Sprintf("duplicate task id %q (first at %s[%d])", id, prev.key, prev.index)})
			case dup:
				probs = append(probs, statefile.Problem{At: at, Field: field, Msg: fmt.Sprintf("%q is also in %s[%d] (expected each task in one split)", id, prev.key, prev.index)})
			default:
				first[id] = place{list.key, i}
			}
		}
	}
	return probs
}
