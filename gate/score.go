package gate

import (
	"math"

	"github.com/hgate/hgate/benchmark"
)

// round4 rounds a score the way results.tsv stores it, so a score compares equal to its
// own recorded value.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// valScore is the mean reward over tasks. A null reward (or a task with no result) counts
// as 0.0 under the "agent" timeout policy and is left out under "infra".
func valScore(tasks []string, results map[string]benchmark.Result, policy string) (score float64, nulls int) {
	mean, nulls := valMean(tasks, results, policy)
	return round4(mean), nulls
}

// valMean is valScore before rounding: what a difference of two scores is taken from
// (receipts and baseline.json keep it as val_mean, see ExactScore).
func valMean(tasks []string, results map[string]benchmark.Result, policy string) (mean float64, nulls int) {
	var sum float64
	n := 0
	for _, id := range tasks {
		r, ok := results[id]
		if !ok || r.Reward == nil {
			nulls++
			if policy == "infra" {
				continue
			}
			n++
			continue
		}
		sum += *r.Reward
		n++
	}
	if n == 0 {
		return 0, nulls
	}
	return sum / float64(n), nulls
}

// rewards turns runner results into the reward map the state files hold.
func rewards(results map[string]benchmark.Result) map[string]*float64 {
	m := make(map[string]*float64, len(results))
	for id, r := range results {
		m[id] = r.Reward
	}
	return m
}

func passedCount(tasks []string, results map[string]benchmark.Result) (passed int, failed []string) {
	failed = []string{}
	for _, id := range tasks {
		if r, ok := results[id]; ok && r.Passed() {
			passed++
		} else {
			failed = append(failed, id)
		}
	}
	return passed, failed
}
