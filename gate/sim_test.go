package gate

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// The noise simulation: a benchmark whose every task passes with a probability, drawn per
// trial, that the candidate's own file sets. quality.txt (the one allowed file) holds
// "DELTA SEED": task i passes with probability p_i + DELTA, p_i spread over [0.15, 0.85],
// and SEED (a new one per candidate) with HGATE_TRIAL seeds the draws, so two candidates of
// the same quality are two independent samples, as trivially different trees are. The real
// gate (Run, RecordRow, the ledger, the clean room) judges each candidate.
const simTasks = 100 // the split puts 30 of them in the test split

const simScript = `read delta seed < quality.txt
echo "$HGATE_TASKS" | awk -v d="$delta" -v s="$seed" -v t="$HGATE_TRIAL" -v sp="$HGATE_SPLIT" '{
	n = split($0, ids, ",")
	srand(s * 100 + t * 2 + (sp == "test")) # below 2^31: awk seeds are 32-bit
	printf "{"
	for (k = 1; k <= n; k++) {
		i = substr(ids[k], 2) + 0
		p = 0.15 + 0.7 * (i * 0.618034 - int(i * 0.618034)) + d
		printf "%s\"%s\": %d", (k > 1 ? ", " : ""), ids[k], (rand() < p ? 1 : 0)
	}
	print "}"
}'
`

// simP is task i's pass probability at DELTA 0, as simScript computes it.
func simP(id string) float64 {
	i, _ := strconv.Atoi(id[1:])
	x := float64(i) * 0.618034
	return 0.15 + 0.7*(x-math.Floor(x))
}

type simRepo struct {
	repo *gittest.Repo
	env  *Env
	seed int
	test []string
}

func newSimRepo(b testing.TB, gateSection string, seed int) *simRepo {
	var ids []string
	for i := range simTasks {
		ids = append(ids, fmt.Sprintf("t%03d", i))
	}
	r := &simRepo{repo: gittest.New(b), seed: seed * 10000}
	r.repo.WriteFiles(map[string]string{
		"hgate.yaml": "allow: [quality.txt]\nbenchmark:\n  tasks: {file: tasks.txt}\n  batch: [sh, sim.sh]\n  task_timeout: 1m\n" +
			"suite: {threshold: 0}\n" + gateSection,
		".gitignore":  "/workspace/\n",
		"tasks.txt":   strings.Join(ids, "\n") + "\n",
		"sim.sh":      simScript,
		"quality.txt": fmt.Sprintf("0 %d\n", r.seed),
	})
	r.repo.Commit("init")
	g, err := gitguard.Open(r.repo.Dir)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := LoadConfig(g, "hgate.yaml", io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	r.env = &Env{Config: cfg, Repo: g, CleanRoom: true}
	if _, err := Prepare(context.Background(), r.env); err != nil {
		b.Fatal(err)
	}
	sp, err := store{r.env}.loadSplit()
	if err != nil {
		b.Fatal(err)
	}
	r.test = sp.Test
	return r
}

// gate judges a new candidate of the given quality (a fresh seed, so a new tree).
func (r *simRepo) gate(b *testing.B, delta float64) *Answer {
	r.seed++
	r.repo.Write("quality.txt", fmt.Sprintf("%g %d\n", delta, r.seed))
	rep, err := Run(context.Background(), r.env, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return rep
}

// bestEstimate is the best's val_score as the gate compares with it (CurrentBest, the one
// value hgate calls the best).
func (r *simRepo) bestEstimate(b *testing.B) float64 {
	best, err := CurrentBest(r.env.Config, r.env.Repo)
	if err != nil || best == nil {
		b.Fatalf("best: %v", err)
	}
	return best.ValScore
}

// chain runs n do-nothing iterations at the given quality: each a new tree (a fresh seed),
// gated, and when kept committed and recorded as the loop does. It returns the new bests.
func (r *simRepo) chain(b *testing.B, n int, delta float64) (newBests int) {
	for range n {
		if !r.gate(b, delta).Passed() {
			r.repo.Git("checkout", "-q", "quality.txt")
			continue
		}
		r.repo.Git("commit", "-qam", "do nothing")
		rr, err := RecordRow(r.env, RecordOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if rr.NewBest {
			newBests++
		}
	}
	return newBests
}

func (r *simRepo) truth() float64 {
	var sum float64
	for _, id := range r.test {
		sum += simP(id)
	}
	return sum / float64(len(r.test))
}

type simRule struct {
	name, section string
}

// BenchmarkNoiseSimulation prints today's rule (one trial, val_score >= best) against the
// noise-aware gate at 30 test tasks: the keep rate of candidates 10 and 5 points worse,
// equal, 5 and 10 points better than the best; how far the best's estimate rises above
// its true value after 50 do-nothing iterations (each kept one committed and recorded);
// how far 100 re-gates of trivially changed do-nothing trees move the best's estimate
// (fishing: an agent that touches an allowed file for a fresh tree and a fresh test run,
// again and again); and the trials run per test task. HGATE_SIM_GATES (default 40) sets
// the gates per quality level, HGATE_SIM_CHAINS (default 4) the 50-iteration chains per
// rule, HGATE_SIM_FISH_CHAINS (default 2) the 100-re-gate fishing chains per rule.
func BenchmarkNoiseSimulation(b *testing.B) {
	gates, chains := envInt("HGATE_SIM_GATES", 40), envInt("HGATE_SIM_CHAINS", 4)
	fishChains := envInt("HGATE_SIM_FISH_CHAINS", 2)
	const fishLen = 100
	rules := []simRule{
		// Written out: the default, trials: auto, would choose trials on this noisy benchmark.
		{"today (1 trial, no margin)", "gate:\n  trials: {min: 1, max: 1}\n"},
		{"noise-aware", "gate:\n  trials: {min: 2, max: 8}\n  margin: 0.025\n  confidence: 0.95\n"},
	}
	levels := []float64{-0.10, -0.05, 0, 0.05, 0.10}
	const repos = 4 // baselines per rule: the keep rate averages over baseline draws too
	out := os.Stdout
	for range b.N {
		type result struct {
			keep      [5]float64
			trials    [5]float64
			inflation float64
			newBests  float64
			fishMove  float64
			fishBests float64
		}
		res := make([]result, len(rules))
		for ri, rule := range rules {
			rs := make([]*simRepo, repos)
			for k := range rs {
				rs[k] = newSimRepo(b, rule.section, 1+ri*100+k)
			}
			if len(rs[0].test) != 30 {
				b.Fatalf("the split has %d test tasks, want 30", len(rs[0].test))
			}
			for li, delta := range levels {
				kept, trials := 0, 0
				for g := range gates {
					rep := rs[g%repos].gate(b, delta)
					if rep.Passed() {
						kept++
					}
					trials += max(rep.Steps.Step2.Trials, 1)
				}
				res[ri].keep[li] = float64(kept) / float64(gates)
				res[ri].trials[li] = float64(trials) / float64(gates)
			}
			for c := range chains {
				r := newSimRepo(b, rule.section, 1000+ri*100+c)
				res[ri].newBests += float64(r.chain(b, 50, 0)) / float64(chains)
				res[ri].inflation += (r.bestEstimate(b) - r.truth()) / float64(chains)
			}
			// Fishing: every re-gate is a new tree as good as the best (the best stays at
			// quality 0, so does each tree). The sim's noise comes from the seed in
			// quality.txt, which the pass probabilities ignore: the fresh seed is the nonce
			// that makes a new tree and a fresh, independent test run.
			for c := range fishChains {
				r := newSimRepo(b, rule.section, 2000+ri*100+c)
				start := r.bestEstimate(b)
				res[ri].fishBests += float64(r.chain(b, fishLen, 0)) / float64(fishChains)
				res[ri].fishMove += (r.bestEstimate(b) - start) / float64(fishChains)
			}
		}
		fmt.Fprintf(out, "\nnoise simulation: 30 test tasks, pass probabilities 0.15-0.85, %d gates per level, %d chains of 50 do-nothing iterations, %d fishing chains of %d re-gates\n", gates, chains, fishChains, fishLen)
		fmt.Fprintf(out, "%-28s", "")
		for _, rule := range rules {
			fmt.Fprintf(out, "  %-28s", rule.name)
		}
		fmt.Fprintln(out)
		for li, delta := range levels {
			fmt.Fprintf(out, "%-28s", fmt.Sprintf("kept at %+.0f points", delta*100))
			for ri := range rules {
				fmt.Fprintf(out, "  %-28s", fmt.Sprintf("%3.0f%%  (%.1f trials/task)", 100*res[ri].keep[li], res[ri].trials[li]))
			}
			fmt.Fprintln(out)
		}
		fmt.Fprintf(out, "%-28s", "best's inflation after 50")
		for ri := range rules {
			fmt.Fprintf(out, "  %-28s", fmt.Sprintf("%+.4f  (%.1f new bests)", res[ri].inflation, res[ri].newBests))
		}
		fmt.Fprintln(out)
		fmt.Fprintf(out, "%-28s", fmt.Sprintf("best's move, %d re-gates", fishLen))
		for ri := range rules {
			fmt.Fprintf(out, "  %-28s", fmt.Sprintf("%+.4f  (%.1f new bests)", res[ri].fishMove, res[ri].fishBests))
		}
		fmt.Fprintln(out)
		fmt.Fprintf(out, "%-28s", "mean trials per test task")
		for ri := range rules {
			var sum float64
			for _, t := range res[ri].trials {
				sum += t
			}
			fmt.Fprintf(out, "  %-28s", fmt.Sprintf("%.2f", sum/float64(len(levels))))
		}
		fmt.Fprintln(out)
		na := res[len(rules)-1]
		b.ReportMetric(na.keep[0], "kept@-10")
		b.ReportMetric(na.keep[3], "kept@+5")
		b.ReportMetric(na.inflation, "inflation")
		b.ReportMetric(res[0].inflation, "inflation-today")
		b.ReportMetric(na.fishMove, "fishing-move")
		b.ReportMetric(res[0].fishMove, "fishing-move-today")
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestTrialsAutoMissRate: gate.trials: auto's decision at prepare judges a benchmark with
// three test tasks of pass rate 0.7 (the others deterministic) deterministic at most 5% of
// the time. Part one draws the benchmark's runs from a seeded source through the decision
// itself (trialsChooser.choose, over a runner that answers from the draws): with four runs of the
// test split the miss rate is (0.7^4+0.3^4)^3 = 1.5%; with two, as before, 19%. Part two (skipped under -short)
// runs prepare on the noise simulation's benchmark (simScript) and checks that the
// decision ran the test split four times and the train split once, and found it noisy.
func TestTrialsAutoMissRate(t *testing.T) {
	reps := envInt("HGATE_SIM_PREPARES", 600) // the 1.5% miss rate's standard error is then 0.5%
	if testing.Short() && os.Getenv("HGATE_SIM_PREPARES") == "" {
		reps = 200 // the quick loop: the same seeded draws, fewer of them (standard error 0.9%)
	}
	_, e := prepRepo(t, "")
	test := []string{"t01", "t02", "t03", "t04", "t05", "t06"} // t01..t03 noisy
	rng := rand.New(rand.NewPCG(42, 27))
	draw := func(id string, _ int) *float64 {
		if id <= "t03" {
			if rng.Float64() < 0.7 {
				return reward(1)
			}
			return reward(0)
		}
		return reward(1)
	}
	missed := func(runs int) float64 {
		miss := 0
		for range reps {
			f := &fakeRun{reward: draw}
			first, _ := f.Run(context.Background(), benchmark.Request{Tasks: test})
			var c *TrialsChoice
			if runs == autoRuns {
				var err error
				if c, _, err = (trialsChooser{e, f}).choose(context.Background(), test, nil, first.Results, t.TempDir()); err != nil {
					t.Fatal(err)
				}
			} else { // the old rule: one further run
				second, _ := f.Run(context.Background(), benchmark.Request{Tasks: test})
				c = &TrialsChoice{}
				for _, id := range test {
					if varies([]*float64{first.Results[id].Reward, second.Results[id].Reward}) {
						c.Differing++
					}
				}
			}
			if !c.noisy() {
				miss++
			}
		}
		return float64(miss) / float64(reps)
	}
	four, two := missed(autoRuns), missed(2)
	t.Logf("judged deterministic: %.1f%% with %d runs, %.1f%% with 2 (%d draws each)", 100*four, autoRuns, 100*two, reps)
	if four > 0.05 {
		t.Errorf("with %d runs a benchmark of three 0.7 tasks is judged deterministic %.1f%% of the time, above 5%%", autoRuns, 100*four)
	}
	if two < 0.10 {
		t.Errorf("two runs miss %.1f%%: the simulation does not tell the rules apart", 100*two)
	}

	if testing.Short() {
		return // the end-to-end part below runs prepare over 100 tasks, eight times
	}
	r := newSimRepo(t, "", 7)
	base, err := store{r.env}.baseline()
	if err != nil || base == nil || base.Trials == nil {
		t.Fatalf("baseline %+v: %v", base, err)
	}
	if base.Trials.Tasks != len(r.test) || !base.Trials.noisy() || len(base.Test[r.test[0]]) < autoRuns {
		t.Errorf("auto on the simulation: %+v, %d trial(s) of a test task kept", base.Trials, len(base.Test[r.test[0]]))
	}
}
