package check

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/config"
)

// TestReportExit: the exit code is the worst level's (warn is 0), and the one line of a
// level that could not be checked is its first.
func TestReportExit(t *testing.T) {
	var r Report
	r.Add(Result{Level: LevelConfig, Status: Warn})
	if r.Exit != 0 {
		t.Fatalf("warn: exit %d", r.Exit)
	}
	r.Add(Result{Level: LevelBenchmark, Status: Fail})
	r.Add(Result{Level: LevelAgent, Status: Cannot, Lines: []string{"the agent did not start", "spent $0.00"}})
	if r.Exit != 2 || r.FirstCannot() != "agent: the agent did not start" {
		t.Fatalf("exit %d, line %q", r.Exit, r.FirstCannot())
	}
	res := Result{Status: Cannot}
	res.worsen(Warn)
	if res.Status != Cannot {
		t.Fatalf("worsen made cannot %s", res.Status)
	}
}

// TestPickPrefersPasses: the tasks that passed in the last train run come first, so that
// emptying the allowed files has something to break.
func TestPickPrefersPasses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "train_results.json")
	data := `{"split": "train", "timestamp": "2026-01-01T00:00:00+00:00", "results": {"a": 0.0, "b": 1.0, "c": null, "d": 1.0}}`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := pick([]string{"a", "b", "c", "d"}, path, 3); !slices.Equal(got, []string{"b", "d", "a"}) {
		t.Fatalf("pick: %v", got)
	}
	if got := pick([]string{"a", "b"}, filepath.Join(t.TempDir(), "none.json"), 5); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("pick without train results: %v", got)
	}
}

// TestChanged: a reward that moved, a null against a number included, is named.
func TestChanged(t *testing.T) {
	one, zero := 1.0, 0.0
	a := map[string]benchmark.Result{"x": {Reward: &one}, "y": {Reward: &one}, "z": {Reward: &zero}}
	b := map[string]benchmark.Result{"x": {Reward: &one}, "y": {Reward: &zero}, "z": {}}
	if got := changed([]string{"x", "y", "z"}, a, b); !slices.Equal(got, []string{"y 1→0", "z 0→null"}) {
		t.Fatalf("changed: %v", got)
	}
	if got := changed([]string{"x"}, a, b); len(got) != 0 {
		t.Fatalf("nothing moved, got %v", got)
	}
}

// TestAllowedScorers: an allowed file the benchmark's commands name (by path, through
// {task}, or inside a Harbor dataset folder) is found; the agent's own files and words
// that are no file are not.
func TestAllowedScorers(t *testing.T) {
	b := config.Benchmark{
		Run:    []string{"sh", "tasks/{task}/check.sh", "{task}", "--out={trace_dir}"},
		Tasks:  config.Tasks{Command: []string{"python3", "list.py"}},
		Harbor: &config.Harbor{Path: "tb"},
	}
	allowed := []string{"agent/agent.sh", "tasks/t1/check.sh", "tasks/t1/data.txt", "list.py", "tb/t1/tests/test.sh", "tbx/x", "sh2"}
	got := AllowedScorers(b, allowed)
	want := []string{"tasks/t1/check.sh", "list.py", "tb/t1/tests/test.sh"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := AllowedScorers(config.Benchmark{Run: []string{"sh", "tasks/{task}/check.sh"}}, []string{"agent/agent.sh", "PROGRAM.md"}); len(got) != 0 {
		t.Fatalf("the example's allow names no scorer, got %q", got)
	}
}
