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
	// Test is the test split (sorted). With a sealed final split, split.json's "test"
	// lists the test and the final ids together (Format 2), so that the file the agent
	// reads does not tell them apart: Parse keeps that list aside and leaves Test empty
	// until Unseal takes the final ids, read from the sealed record, out of it.
	Test []string `json:"test,required"`
	// Final is the sealed final split (sorted): scored only for the user, never by a
	// gate, an agent or hgate bench. Known in memory once Unseal has read it from the
	// sealed record; split.json never lists it once the record is sealed.
	Final []string `json:"final,omitempty"`
	// FinalSHA names the sealed record of the final split (gate/final.go): the keyed
	// digest of the baseline's final trials, whose keys are the final ids. FinalTasks is
	// how many there are: a count, which names no id.
	FinalSHA   string `json:"final_sha,omitempty"`
	FinalTasks int    `json:"final_tasks,omitempty"`
	// Format is FormatSealed when "test" holds the final ids too; absent (0) in a
	// split.json written before, whose "test" is the test split alone and whose final
	// ids are every other task (derivable by the agent until `hgate prepare --reset`).
	Format int `json:"format,omitempty"`
	// Stratify names the labels the split was stratified by, besides the baseline's
	// pass or fail.
	Stratify []string `json:"stratify,omitempty"`

	// held is a FormatSealed file's "test" list (test and final ids) until Unseal.
	held []string
}

// FormatSealed is the split.json format whose "test" list holds the sealed final ids
// too. A split without a final split has no format field and is written as before.
const FormatSealed = 2

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
// none listed twice, none in both splits. The lists come back sorted. A
// FormatSealed file's test list is kept aside (Test is empty) until Unseal.
func Parse(file string, data []byte) (*Split, error) {
	var s Split
	if err := statefile.DecodeJSON(file, data, &s); err != nil {
		return nil, err
	}
	if err := statefile.Located(file, data, append(s.problems(), s.fileProblems()...)); err != nil {
		return nil, err
	}
	slices.Sort(s.Train)
	slices.Sort(s.Test)
	slices.Sort(s.Final)
	if s.Format == FormatSealed {
		s.held, s.Test = s.Test, nil
	}
	return &s, nil
}

// FinalDerivable reports whether the file lists the final ids nowhere while naming a
// sealed record (a split.json written before FormatSealed): the final ids are then every
// task less its train and test ids, which the agent can work out.
func (s *Split) FinalDerivable() bool { return s.FinalSHA != "" && s.Format != FormatSealed }

// TestCount is how many tasks the test split holds, whether or not it is unsealed:
// split.json's count, for readers that need no id (the report).
func (s *Split) TestCount() int {
	if s.held != nil {
		return len(s.held) - s.FinalTasks
	}
	return len(s.Test)
}

// Unseal sets the final ids, read from the sealed record FinalSHA names, and takes
// them out of a FormatSealed test list, so that Test is the test split alone. In a
// split.json written before FormatSealed they must be in no list. An error says how
// the record and the file disagree; the caller names the files.
func (s *Split) Unseal(final []string) error {
	final = slices.Sorted(slices.Values(final))
	switch {
	case s.FinalSHA == "" && len(final) == 0:
		return nil
	case s.FinalSHA == "":
		return fmt.Errorf("has no final_sha, but %d final ids were given", len(final))
	case len(final) != s.FinalTasks:
		return fmt.Errorf("final_tasks is %d, but the sealed record names %d final tasks", s.FinalTasks, len(final))
	}
	if s.held == nil {
		for _, id := range final {
			if slices.Contains(s.Train, id) || slices.Contains(s.Test, id) {
				return fmt.Errorf("final task %q is also listed as a train or test task", id)
			}
		}
		s.Final = final
		return nil
	}
	for _, id := range final {
		if _, ok := slices.BinarySearch(s.held, id); !ok {
			return fmt.Errorf("final task %q of the sealed record is not in the test list", id)
		}
	}
	s.Test = slices.DeleteFunc(slices.Clone(s.held), func(id string) bool {
		_, ok := slices.BinarySearch(final, id)
		return ok
	})
	s.Final, s.held = final, nil
	return nil
}

// Marshal returns the bytes of split.json, its lists sorted; a split that Parse
// would refuse is an error, one line per problem. With a sealed final split whose
// ids it holds (FinalSHA and Final), it writes FormatSealed: the test and final ids
// as one "test" list, never "final". A split whose final ids it does not hold (read
// from a file before FormatSealed, not unsealed) is written as it was read.
func (s *Split) Marshal() ([]byte, error) {
	if err := statefile.Unplaced(s.problems()); err != nil {
		return nil, err
	}
	out := Split{Seed: s.Seed, Train: slices.Sorted(slices.Values(s.Train)), Test: slices.Sorted(slices.Values(s.Test)), Stratify: s.Stratify,
		FinalSHA: s.FinalSHA, FinalTasks: s.FinalTasks}
	switch {
	case s.held != nil:
		out.Format, out.Test = FormatSealed, slices.Clone(s.held)
	case s.FinalSHA != "" && len(s.Final) > 0:
		out.Format, out.Test = FormatSealed, slices.Sorted(slices.Values(append(slices.Clone(s.Test), s.Final...)))
	case len(s.Final) > 0:
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
	return append(probs, s.finalProblems()...)
}

// finalProblems checks the sealed final split's fields: the count, and a format this
// hgate reads.
func (s *Split) finalProblems() []statefile.Problem {
	var probs []statefile.Problem
	if s.FinalTasks < 0 {
		probs = append(probs, problem("final_tasks", fmt.Sprintf("%d is negative", s.FinalTasks)))
	}
	if s.FinalSHA != "" && len(s.Final) > 0 && len(s.Final) != s.FinalTasks {
		probs = append(probs, problem("final_tasks", fmt.Sprintf("%d, but %d final ids are listed", s.FinalTasks, len(s.Final))))
	}
	if s.Format != 0 && s.Format != FormatSealed {
		probs = append(probs, problem("format", fmt.Sprintf("%d is not a split.json format this hgate reads (none, or %d): was it written by a newer hgate?", s.Format, FormatSealed)))
	}
	return probs
}

// fileProblems checks a file as read: no final id is listed beside the digest of the
// record that holds them; a FormatSealed file names its record, and its test list holds
// the final ids and at least one test task.
func (s *Split) fileProblems() []statefile.Problem {
	var probs []statefile.Problem
	if s.Format != FormatSealed {
		if s.FinalSHA != "" && len(s.Final) > 0 {
			probs = append(probs, problem("final", "listed beside final_sha, whose sealed record alone holds the final ids"))
		}
		return probs
	}
	if s.FinalSHA == "" {
		probs = append(probs, problem("final_sha", fmt.Sprintf("missing: format %d lists the sealed final ids among the test ids, so it needs the record that tells them apart", FormatSealed)))
	}
	if len(s.Final) > 0 {
		probs = append(probs, problem("final", fmt.Sprintf("format %d never lists the final ids apart (they are among the test ids)", FormatSealed)))
	}
	if s.FinalTasks < 1 || s.FinalTasks >= len(s.Test) {
		probs = append(probs, problem("final_tasks", fmt.Sprintf("%d, but the test list of %d ids holds the final ids and at least one test task", s.FinalTasks, len(s.Test))))
	}
	return probs
}

func problem(key, msg string) statefile.Problem {
	return statefile.Problem{At: []string{key}, Field: key, Msg: msg}
}
