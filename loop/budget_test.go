package loop

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/agentout"
	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
)

func TestAgentModel(t *testing.T) {
	codexHome := t.TempDir()
	t.Setenv("CODEX_HOME", codexHome)
	toml := "# codex\nmodel = \"gpt-5-codex\"\n[profiles.fast]\nmodel = \"o4-mini\"\n"
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"codex", "exec", "-m", "o3", "-"}, "o3"},
		{[]string{"codex", "exec", "--model=o3", "-"}, "o3"},
		{[]string{"codex", "exec", "-c", `model="o3"`, "-"}, "o3"},
		{[]string{"sh", "-c", "my-agent --model gpt-4.1 --yes"}, "gpt-4.1"},
		{agentcli.Codex{}.Args(), "gpt-5-codex"}, // from config.toml's top level, not a profile
		{[]string{"sh", "bot.sh"}, ""},
	}
	for _, tt := range tests {
		if got := agentModel(tt.args); got != tt.want {
			t.Errorf("agentModel(%q) = %q; want %q", tt.args, got, tt.want)
		}
	}
}

// A codex run reports tokens only: loop.prices turns them into dollars, which count
// against the budget with the benchmark's spend.
func TestSpendAndBudget(t *testing.T) {
	t.Setenv("CODEX_HOME", t.TempDir()) // no config.toml: the model is unknown
	cached := 0.1
	r := &runner{log: io.Discard, j: &journal{}, dir: t.TempDir(), cfg: config.Loop{
		Agent: []string{"codex"}, BudgetUSD: 20, BudgetTokens: 5_000_000,
		Prices: map[string]config.Price{"gpt-5-codex": {Input: 1, Output: 10, CachedInput: &cached}},
	}}
	it := &Iteration{}
	codex := agentout.Run{Format: agentout.FormatCodex, Tokens: agentout.Tokens{Input: 1_000_000, CacheRead: 2_000_000, Output: 100_000}}
	r.book().addSpend(it, codex)
	// 1M input at $1, 2M cached at $0.10, 100k output at $10: $2.20.
	if it.CostUSD == nil || *it.CostUSD != 2.2 || !it.CostPriced || it.SpendUSD != 2.2 || it.SpendTokens != 3_100_000 {
		t.Fatalf("priced spend: %+v", it)
	}
	if why := r.book().overBudget(); why != "" {
		t.Fatalf("over budget at $2.20, 3.1M tokens: %s", why)
	}
	if err := r.openPrivate(); err != nil {
		t.Fatal(err)
	}
	if err := r.addGateSpend(it, &gate.Answer{Spend: &benchmark.Spend{CostUSD: 1.5, InputTokens: 1_000_000, OutputTokens: 900_000}}); err != nil {
		t.Fatal(err)
	}
	if *it.BenchCostUSD != 1.5 || it.BenchTokens != 1_900_000 || r.j.SpendUSD != 3.7 || r.j.SpendTokens != 5_000_000 {
		t.Fatalf("with the benchmark's spend: %+v, run %v %v", it, r.j.SpendUSD, r.j.SpendTokens)
	}
	if why := r.book().overBudget(); why != "5,000,000 tokens spent of the 5,000,000-token budget" {
		t.Errorf("overBudget = %q", why)
	}
	// A model loop.prices does not name is not priced: its tokens count, its dollars not.
	r2 := &runner{log: io.Discard, j: &journal{}, cfg: config.Loop{Agent: []string{"codex -m o3"}, BudgetUSD: 1,
		Prices: map[string]config.Price{"gpt-5-codex": {Input: 1, Output: 10}}}}
	it2 := &Iteration{}
	r2.book().addSpend(it2, codex)
	if it2.CostUSD != nil || it2.SpendUSD != 0 || it2.SpendTokens != 3_100_000 || !r2.prices.unpriced {
		t.Errorf("unpriced model: %+v", it2)
	}
}

// A resume after a kill in a gate, or between the two writes of a gate's spend, takes
// what the private file holds that the journal does not, once.
func TestResumeCountsGateSpend(t *testing.T) {
	dir := t.TempDir()
	open := func(j *journal) *runner {
		r := &runner{log: io.Discard, j: j, dir: dir}
		if err := r.openPrivate(); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// Gate 1 answered $1 test and $1.50 train, the private file has it, the journal never
	// heard; gate 2 was killed once its runs had reported $0.25 test and $0.50 train.
	r := open(&journal{Current: &Iteration{}})
	if err := r.test.add(benchmark.Spend{CostUSD: 1}, benchmark.Spend{CostUSD: 1.5}, r.j.GateSpends); err != nil {
		t.Fatal(err)
	}
	r.test.gating.Store(true)
	r.test.benchSpent("test", benchmark.Spend{CostUSD: 0.25})
	r.test.benchSpent("train", benchmark.Spend{CostUSD: 0.5})
	r.test.benchSpent("all", benchmark.Spend{CostUSD: 9}) // not a gate's answer's: never counted

	j := &journal{Current: &Iteration{}}
	for i := range 2 { // resumed, then resumed again from the journal the first one saved
		r := open(j)
		if j.SpendUSD != 2 || *j.Current.BenchCostUSD != 2 || j.GateSpends != 2 || r.test.spent.CostUSD != 1.25 || r.test.spent.Flight != nil {
			t.Errorf("resume %d: journal $%v (bench $%v, %d gates), test $%v, flight %+v", i, j.SpendUSD, *j.Current.BenchCostUSD, j.GateSpends, r.test.spent.CostUSD, r.test.spent.Flight)
		}
		path := filepath.Join(dir, journalName)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if j, _, err = parseJournal(path, data); err != nil {
			t.Fatal(err)
		}
	}
}
