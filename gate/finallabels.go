package gate

import (
	"encoding/json"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/suite"
)

// PoolBelow is the fewest tasks a label's value needs to be shown on its own; rarer values
// are pooled into one row, so that no row tells of one or two held-out tasks.
const PoolBelow = 5

// Pooled names the row that pools a label's rare values.
const Pooled = "(pooled: fewer than 5 tasks each)"

// LabelScore is one label value's scores, per split: the best's mean reward and the
// baseline's over the value's tasks in that split. Only the user sees it (the report,
// hgate final --json): the test and final rows are per-task signal of held-out tasks
// pooled by label, which no agent may read.
type LabelScore struct {
	Label string     `json:"label"`
	Value string     `json:"value"`
	Train SplitScore `json:"train"` // train_results.json: the last full train run
	Test  SplitScore `json:"test"`
	Final SplitScore `json:"final"`
}

// SplitScore is a label value's score in one split.
type SplitScore struct {
	Tasks    int      `json:"tasks"`
	Best     *float64 `json:"best,omitempty"`
	Baseline *float64 `json:"baseline,omitempty"`
}

// labelsFile is the tasks' labels as prepare read them, beside the final split's scores.
func labelsFile(repo *gitguard.Repo) string { return filepath.Join(finalDir(repo), "labels.json") }

// keepLabels writes the labels prepare read (nothing for none).
func keepLabels(repo *gitguard.Repo, l benchmark.Labels) error {
	if len(l) == 0 {
		return nil
	}
	data, err := statefile.EncodeJSON(l)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(finalDir(repo), 0o700); err != nil {
		return err
	}
	return statefile.WriteAtomic(labelsFile(repo), data)
}

// loadLabels reads what keepLabels wrote; nil without labels.
func loadLabels(repo *gitguard.Repo) (benchmark.Labels, error) {
	data, err := os.ReadFile(labelsFile(repo))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var l benchmark.Labels
	return l, json.Unmarshal(data, &l)
}

// splitTrials is one split's tasks with the best's and the baseline's rewards.
type splitTrials struct {
	tasks      []string
	best, base Trials
}

// labelScores is each label value's scores over train, test and final (see LabelScore).
func labelScores(l benchmark.Labels, train *suite.TrainResults, test, final splitTrials) []LabelScore {
	var trainSplit splitTrials
	if train != nil {
		trainSplit.tasks = slices.Sorted(maps.Keys(train.Results))
		trainSplit.best = Trials{}
		for id, r := range train.Results {
			trainSplit.best[id] = []*float64{r}
		}
	}
	var out []LabelScore
	for _, key := range labelKeys(l) {
		groups := map[string][]string{}
		for _, id := range slices.Concat(trainSplit.tasks, test.tasks, final.tasks) {
			if v, ok := l[id][key]; ok {
				groups[v] = append(groups[v], id)
			}
		}
		for _, v := range slices.Sorted(maps.Keys(groups)) {
			if len(groups[v]) < PoolBelow {
				groups[Pooled] = append(groups[Pooled], groups[v]...)
				delete(groups, v)
			}
		}
		for _, v := range slices.Sorted(maps.Keys(groups)) {
			in := groups[v]
			out = append(out, LabelScore{Label: key, Value: v,
				Train: scoreOf(trainSplit, in), Test: scoreOf(test, in), Final: scoreOf(final, in)})
		}
	}
	return out
}

// labelKeys is every label name any task carries, sorted.
func labelKeys(l benchmark.Labels) []string {
	keys := map[string]bool{}
	for _, m := range l {
		for k := range m {
			keys[k] = true
		}
	}
	return slices.Sorted(maps.Keys(keys))
}

// scoreOf is s's score over its tasks that are among in.
func scoreOf(s splitTrials, in []string) SplitScore {
	var ids []string
	for _, id := range s.tasks {
		if slices.Contains(in, id) {
			ids = append(ids, id)
		}
	}
	out := SplitScore{Tasks: len(ids)}
	if len(ids) == 0 {
		return out
	}
	mean := func(t Trials) *float64 {
		if t == nil {
			return nil
		}
		m, _ := t.scoreMean(ids, "agent")
		return &m
	}
	out.Best, out.Baseline = mean(s.best), mean(s.base)
	return out
}
