package config

import (
	"slices"
	"testing"
	"time"
)

// TestMeasuredDiff: only what a baseline is comparable under counts (not concurrency, allow,
// gate or loop), a list's order counts only where it is a command, and each change is one
// line in hgate.yaml's spelling.
func TestMeasuredDiff(t *testing.T) {
	cases := []struct {
		name   string
		change func(c *Config)
		want   []string
	}{
		{"nothing", func(c *Config) {}, nil},
		{"concurrency, allow, gate, loop", func(c *Config) {
			c.Benchmark.Concurrency = 9
			c.Allow = append(c.Allow, "x")
			c.Gate.TrialsMax = 8
			c.Loop.Patience = 1
		}, nil},
		{"clean room lists reordered", func(c *Config) {
			c.CleanRoom.Carry = []string{"b/", "a/"}
		}, nil},
		{"run", func(c *Config) { c.Benchmark.Run = []string{"sh", "tasks/{task}/chek.sh"} },
			[]string{`benchmark.run: ["sh", "tasks/{task}/check.sh"] → ["sh", "tasks/{task}/chek.sh"]`}},
		{"run to batch", func(c *Config) { c.Benchmark.Run, c.Benchmark.Batch = nil, []string{"all.sh"} },
			[]string{`benchmark.run: ["sh", "tasks/{task}/check.sh"] → (not set)`, `benchmark.batch: (not set) → ["all.sh"]`}},
		{"timeout and policy", func(c *Config) {
			c.Benchmark.TaskTimeout = 90 * time.Second
			c.Benchmark.TimeoutPolicy = "infra"
		}, []string{"benchmark.task_timeout: 20m → 1m30s", "benchmark.timeout_policy: agent → infra"}},
		{"tasks and env", func(c *Config) {
			c.Benchmark.Tasks = Tasks{File: "tasks.txt"}
			c.Benchmark.Env = map[string]string{"GOFLAGS": "-trimpath"}
		}, []string{`benchmark.tasks: {"glob":"tasks/*"} → {"file":"tasks.txt"}`, `benchmark.env: (not set) → {"GOFLAGS":"-trimpath"}`}},
		{"clean room and split", func(c *Config) {
			c.CleanRoom.Enabled = false
			c.CleanRoom.Caches = map[string]string{"GOCACHE": "go-build"}
			c.Split.Seed = 7
		}, []string{"clean_room.enabled: true → false", `clean_room.caches: (not set) → {"GOCACHE":"go-build"}`, "split.seed: 42 → 7"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			from := with(func(c *Config) { c.CleanRoom.Carry = []string{"a/", "b/"} })
			to := with(func(c *Config) { c.CleanRoom.Carry = []string{"a/", "b/"}; tc.change(c) })
			if got := from.Measured().Diff(to.Measured()); !slices.Equal(got, tc.want) {
				t.Errorf("Diff:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
