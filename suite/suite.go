// Package suite owns the two files the gate's Steps 1 and 3 work from:
// suite.json, the regression suite of train tasks that must keep passing,
// and train_results.json, the last full run of the train split. Both are
// written byte-compatible with auto-harness (json.dump with indent=2, no
// trailing newline; null rewards left out of last_results; split and
// timestamp null in a train_results.json no run has filled yet).
//
// A task passes when its reward is not null and at least 0.5 (Passed). The
// suite's pass rate counts a task the runner did not return as failed, and
// an empty suite passes: there is nothing to regress yet.
package suite

//lint:file-ignore SA5008 `required` is internal/statefile's own json tag option (the key must be present), which encoding/json ignores

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/hgate/hgate/internal/statefile"
)

// PassMark is the lowest reward that counts as a pass.
const PassMark = 0.5

// Passed reports whether a reward is a pass: not null and >= PassMark.
func Passed(reward *float64) bool { return reward != nil && *reward >= PassMark }

// Suite is suite.json.
type Suite struct {
	Tasks       []string            `json:"tasks,required"`     // sorted, unique
	Threshold   float64             `json:"threshold,required"` // minimum pass rate, in [0, 1]
	LastResults map[string]*float64 `json:"last_results"`       // reward of each suite task at the last gate, null when it had none
}

// New returns an empty suite with the given threshold.
func New(threshold float64) *Suite {
	return &Suite{Tasks: []string{}, Threshold: threshold, LastResults: map[string]*float64{}}
}

// Load reads and validates suite.json. A missing file is an error wrapping
// fs.ErrNotExist; a malformed one is an error naming file, line and field,
// never an empty suite.
func Load(path string) (*Suite, error) {
	return statefile.Load(path, "suite", Parse)
}

// Parse decodes and validates the content of suite.json; file names it in
// messages. A missing last_results is read as empty; tasks come back sorted.
func Parse(file string, data []byte) (*Suite, error) {
	var s Suite
	if err := statefile.DecodeJSON(file, data, &s); err != nil {
		return nil, err
	}
	if s.LastResults == nil {
		s.LastResults = map[string]*float64{}
	}
	// A null reward (hgate before this version wrote one for a task that
	// timed out) says nothing: read as absent, as it is written.
	maps.DeleteFunc(s.LastResults, func(_ string, r *float64) bool { return r == nil })
	if errs := statefile.Located(file, data, s.problems()); errs != nil {
		return nil, errs
	}
	slices.Sort(s.Tasks)
	return &s, nil
}

// Marshal returns the bytes of suite.json, tasks sorted; a suite that Parse
// would refuse is an error, one line per problem.
func (s *Suite) Marshal() ([]byte, error) {
	if probs := s.problems(); len(probs) > 0 {
		return nil, statefile.Unplaced(probs)
	}
	out := *s
	out.Tasks = slices.Sorted(slices.Values(s.Tasks))
	// A task without a reward (it timed out) is left out, as auto-harness's
	// gate does (last_results = the non-null results).
	out.LastResults = make(map[string]*float64, len(s.LastResults))
	for id, r := range s.LastResults {
		if r != nil {
			out.LastResults[id] = r
		}
	}
	return statefile.EncodePython(&out)
}

// Promote adds the ids not yet in the suite and returns them, sorted. The
// suite never shrinks and Tasks stays sorted. Empty ids are ignored.
func (s *Suite) Promote(ids ...string) []string {
	have := make(map[string]bool, len(s.Tasks))
	for _, id := range s.Tasks {
		have[id] = true
	}
	var added []string
	for _, id := range ids {
		if id == "" || have[id] {
			continue
		}
		have[id] = true
		added = append(added, id)
	}
	slices.Sort(added)
	s.Tasks = append(s.Tasks, added...)
	slices.Sort(s.Tasks)
	return added
}

// Score counts the suite tasks that passed in results. total is the size
// of the suite: a task missing from results counts as failed.
func (s *Suite) Score(results map[string]*float64) (passed, total int) {
	for _, id := range s.Tasks {
		if Passed(results[id]) {
			passed++
		}
	}
	return passed, len(s.Tasks)
}

// Failing returns the suite tasks that did not pass in results (missing
// ones included), sorted.
func (s *Suite) Failing(results map[string]*float64) []string {
	var out []string
	for _, id := range slices.Sorted(slices.Values(s.Tasks)) {
		if !Passed(results[id]) {
			out = append(out, id)
		}
	}
	return out
}

// Pass reports whether results clear the suite: the pass rate passed/total
// is at least the threshold, computed as auto-harness does. An empty suite
// passes.
func (s *Suite) Pass(results map[string]*float64) bool {
	passed, total := s.Score(results)
	if total == 0 {
		return true
	}
	return float64(passed)/float64(total) >= s.Threshold
}

// RecordResults replaces LastResults with each suite task's reward in
// results (null for a task that has none).
func (s *Suite) RecordResults(results map[string]*float64) {
	s.LastResults = make(map[string]*float64, len(s.Tasks))
	for _, id := range s.Tasks {
		if r := results[id]; r != nil {
			v := *r
			s.LastResults[id] = &v
		} else {
			s.LastResults[id] = nil
		}
	}
}

func (s *Suite) problems() []statefile.Problem {
	var probs []statefile.Problem
	if !(s.Threshold >= 0 && s.Threshold <= 1) {
		probs = append(probs, statefile.Problem{At: []string{"threshold"}, Field: "threshold",
			Msg: fmt.Sprintf("%s is outside [0, 1] (expected a pass-rate fraction such as 0.8)", number(s.Threshold))})
	}
	probs = append(probs, idProblems("tasks", s.Tasks)...)
	probs = append(probs, rewardProblems("last_results", s.LastResults)...)
	return probs
}

// idProblems checks a list of task ids: each valid, none twice.
func idProblems(key string, ids []string) []statefile.Problem {
	var probs []statefile.Problem
	first := make(map[string]int, len(ids))
	for i, id := range ids {
		at := []string{key, strconv.Itoa(i)}
		field := fmt.Sprintf("%s[%d]", key, i)
		if msg := statefile.TaskIDProblem(id); msg != "" {
			probs = append(probs, statefile.Problem{At: at, Field: field, Msg: msg})
			continue
		}
		if j, dup := first[id]; dup {
			probs = append(probs, statefile.Problem{At: at, Field: field, Msg: fmt.Sprintf("duplicate task id %q (first at %s[%d])", id, key, j)})
			continue
		}
		first[id] = i
	}
	return probs
}

// rewardProblems checks a map of task id to reward, in id order.
func rewardProblems(key string, m map[string]*float64) []statefile.Problem {
	var probs []statefile.Problem
	for _, id := range slices.Sorted(maps.Keys(m)) {
		at := []string{key, id}
		field := statefile.FieldPath(key, id)
		if msg := statefile.TaskIDProblem(id); msg != "" {
			probs = append(probs, statefile.Problem{At: at, Field: field, Msg: msg})
			continue
		}
		if r := m[id]; r != nil && !(*r >= 0 && *r <= 1) {
			probs = append(probs, statefile.Problem{At: at, Field: field, Msg: fmt.Sprintf("reward %s is outside [0, 1] (expected a number from 0 to 1, or null)", number(*r))})
		}
	}
	return probs
}

func number(f float64) string {
	if s, err := statefile.PythonFloat(f, 64); err == nil {
		return s
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// TrainResults is train_results.json: the rewards of the last full run of
// the train split.
type TrainResults struct {
	Split     string              `json:"split,required"` // "train"; "" = null, as auto-harness's prepare.py writes it before any run
	Timestamp string              `json:"timestamp,required"`
	Results   map[string]*float64 `json:"results,required"`
}

// trainResultsFile is train_results.json as it is on disk: auto-harness
// writes null split and timestamp into the file its prepare.py creates.
type trainResultsFile struct {
	Split     *string             `json:"split,required"`
	Timestamp *string             `json:"timestamp,required"`
	Results   map[string]*float64 `json:"results,required"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NewTrainResults returns the record of a train run finished at now.
func NewTrainResults(results map[string]*float64, now time.Time) *TrainResults {
	r := make(map[string]*float64, len(results))
	maps.Copy(r, results)
	return &TrainResults{Split: "train", Timestamp: statefile.Timestamp(now), Results: r}
}

// LoadTrainResults reads and validates train_results.json. A missing file
// is an error wrapping fs.ErrNotExist.
func LoadTrainResults(path string) (*TrainResults, error) {
	return statefile.Load(path, "train results", ParseTrainResults)
}

// ParseTrainResults decodes and validates the content of train_results.json.
func ParseTrainResults(file string, data []byte) (*TrainResults, error) {
	var f trainResultsFile
	if err := statefile.DecodeJSON(file, data, &f); err != nil {
		return nil, err
	}
	t := TrainResults{Results: f.Results}
	if f.Split != nil {
		t.Split = *f.Split
		if t.Split == "" {
			return nil, fmt.Errorf("%s: split: empty (expected \"train\" or null)", statefile.Locate(file, data, "split"))
		}
	}
	if f.Timestamp != nil {
		t.Timestamp = *f.Timestamp
		if t.Timestamp == "" {
			return nil, fmt.Errorf("%s: timestamp: empty (expected a time like 2026-11-22T03:12:33+00:00, or null)", statefile.Locate(file, data, "timestamp"))
		}
	}
	if errs := statefile.Located(file, data, t.problems()); errs != nil {
		return nil, errs
	}
	return &t, nil
}

// Marshal returns the bytes of train_results.json; results that
// ParseTrainResults would refuse are an error, one line per problem.
func (t *TrainResults) Marshal() ([]byte, error) {
	if probs := t.problems(); len(probs) > 0 {
		return nil, statefile.Unplaced(probs)
	}
	return statefile.EncodePython(&trainResultsFile{Split: orNull(t.Split), Timestamp: orNull(t.Timestamp), Results: t.Results})
}

// Failing returns the train tasks whose recorded reward is not a pass,
// sorted (empty, not nil, when all pass): the candidates for promotion in
// Step 3.
func (t *TrainResults) Failing() []string {
	out := []string{}
	for _, id := range slices.Sorted(maps.Keys(t.Results)) {
		if !Passed(t.Results[id]) {
			out = append(out, id)
		}
	}
	return out
}

func (t *TrainResults) problems() []statefile.Problem {
	var probs []statefile.Problem
	if t.Split != "train" && t.Split != "" {
		probs = append(probs, statefile.Problem{At: []string{"split"}, Field: "split", Msg: fmt.Sprintf("%q is not the train split (expected \"train\" or null)", t.Split)})
	}
	return append(probs, rewardProblems("results", t.Results)...)
}
