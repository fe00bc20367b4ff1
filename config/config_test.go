package config

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/golden"
)

const testDir = "/repo"

// base is the configuration of testdata/valid/minimal.yaml; the other valid
// fixtures are described as changes to it.
func base() Config {
	c := Default()
	c.Dir = testDir
	c.Allow = []string{"agent.py"}
	c.Benchmark.Tasks = Tasks{Glob: "tasks/*"}
	c.Benchmark.Run = []string{"sh", "tasks/{task}/check.sh"}
	return c
}

func with(change func(c *Config)) Config {
	c := base()
	change(&c)
	return c
}

func guard(on bool, warning string) Config {
	return with(func(c *Config) {
		c.FileGuard = on
		if warning != "" {
			c.Warnings = []string{warning}
		}
	})
}

func ptr(f float64) *float64 { return &f }

func TestParseValid(t *testing.T) {
	tests := map[string]Config{
		"minimal.yaml": with(func(c *Config) { c.Allow = []string{"agent/agent.py"} }),
		"gate.yaml": with(func(c *Config) {
			c.Gate = Gate{TrialsMin: 2, TrialsMax: 8, Margin: 0.025, MarginSet: true, Confidence: 0.9, MaxFileBytes: 1 << 20}
		}),
		"gate_auto.yaml": with(func(c *Config) { c.Gate.Margin, c.Gate.MarginSet = 0.01, true }),
		"gate_min_only.yaml": with(func(c *Config) {
			c.Gate.TrialsAuto, c.Gate.TrialsMin, c.Gate.TrialsMax = false, 3, 3
		}),
		"full.yaml": with(func(c *Config) {
			c.Allow = []string{"agent/agent.py", "PROGRAM.md", "prompts/**/*.txt", "!prompts/frozen.txt"}
			c.Ignore = []string{"data/", "*.log"}
			c.Workspace = "state/hgate"
			c.Benchmark = Benchmark{
				Tasks:         Tasks{Glob: "tasks/*"},
				Run:           []string{"sh", "tasks/{task}/check.sh", "--split={split}", "--traces={trace_dir}"},
				Concurrency:   4,
				TaskTimeout:   10 * time.Minute,
				TimeoutPolicy: "infra",
				Env:           map[string]string{"PYTHONHASHSEED": "0", "MODE": "fast", "EMPTY": ""},
			}
			c.Split = Split{TestFraction: 0.25, Seed: -7, Final: 0.2}
			c.Suite = Suite{Threshold: 1}
			c.Loop = Loop{
				Agent:                 []string{"sh", "agent.sh", "{prompt_file}"},
				Program:               "docs/PROGRAM.md",
				AttemptTimeout:        45 * time.Minute,
				Iterations:            20,
				Patience:              0,
				StopScore:             ptr(0.95),
				Until:                 "07:30",
				For:                   8 * time.Hour,
				RepairAttempts:        2,
				Agents:                3,
				MaxConsecutiveCrashes: 1,
				Sandbox: Sandbox{
					Enabled:  true,
					Writable: []string{"~/.claude", ".agent-state/", "/var/cache/agent"},
					Hidden:   []string{"/data/answers"},
				},
				Harness: Harness{Dir: "tools/harness", Read: []string{"~/.venv"}, Enabled: true, ArtifactRepairs: 2, ReflectTimeout: 5 * time.Minute, BuildTimeout: 15 * time.Minute},
			}
			c.CleanRoom = CleanRoom{
				Enabled:  false,
				Carry:    []string{"data/", ".venv/"},
				Env:      []string{"PATH", "OPENAI_API_KEY"},
				Home:     "/tmp/hgate-home",
				Writable: []string{"build/", ".cache"},
				Caches:   map[string]string{"GOCACHE": "go-build", "GOMODCACHE": "go-mod", "PIP_CACHE_DIR": "pip.v2_x"},
				Read:     []string{"/data/models", "~/.config/tool", "data/"},
				TestOnly: []string{"data/test/", "~/held-out"},
				Network:  false,
			}
		}),
		"batch.yaml": with(func(c *Config) {
			c.Allow = []string{"agent/"}
			c.Benchmark.Tasks = Tasks{File: "tasks.txt"}
			c.Benchmark.Run = nil
			c.Benchmark.Batch = []string{"python", "run_all.py"}
			c.Benchmark.Concurrency = 2
		}),
		"harbor_path.yaml": with(func(c *Config) {
			c.Allow = []string{"agent/"}
			c.Benchmark.Tasks = Tasks{}
			c.Benchmark.Run = nil
			c.Benchmark.Harbor = &Harbor{Command: []string{"harbor"}, Path: "datasets/mini", Agent: "terminus-2",
				Model: "anthropic/claude-sonnet-4-5", Env: "docker", Concurrency: 8, TimeoutMultiplier: 1.5, Args: []string{"--ek", "cpus=2"}}
		}),
		"harbor_dataset.yaml": with(func(c *Config) {
			c.Allow = []string{"agent/"}
			c.Benchmark.Tasks = Tasks{File: "tasks.txt"}
			c.Benchmark.Run = nil
			c.Benchmark.Harbor = &Harbor{Command: []string{"uvx", "harbor"}, Dataset: "terminal-bench@2.0", Agent: "my_agent:Agent", Env: "daytona"}
		}),
		"tasks_command.yaml": with(func(c *Config) {
			c.Benchmark.Tasks = Tasks{Command: []string{"sh", "list.sh", "{not_checked}"}}
			c.Benchmark.Run = nil
			c.Benchmark.Batch = []string{"sh", "run.sh", "--tasks={tasks}", "--split={split}"}
		}),
		"run_env_only.yaml": with(func(c *Config) {
			c.Benchmark.Run = []string{"sh", "-c", `sh "tasks/${HGATE_TASK}/check.sh" && echo done`}
		}),
		"agent_preset.yaml": with(func(c *Config) {
			c.Allow = []string{"agent.py", "PROGRAM.md"}
			c.Loop.Agent = []string{"claude"}
			c.Loop.Until = "23:05"
		}),
		"budget.yaml": with(func(c *Config) {
			c.Allow = []string{"agent.sh"}
			c.Loop.Agent = []string{"codex"}
			c.Loop.BudgetUSD, c.Loop.BudgetTokens = 25.5, 40000000
			c.Loop.Prices = map[string]Price{
				"gpt-5-codex": {Input: 1.25, Output: 10, CachedInput: ptr(0.125)},
				"o4-mini":     {Input: 1.1, Output: 4.4},
			}
		}),
		"agent_shell_line.yaml": with(func(c *Config) {
			c.Loop.Agent = []string{"my-agent --prompt {prompt_file} --yes"}
		}),
		"anchors.yaml": with(func(c *Config) {
			c.Allow = []string{"agent/agent.py", "PROGRAM.md"}
			c.Benchmark.TaskTimeout = 90 * time.Second
			c.Loop.Agent = []string{"sh", "tasks/{task}/check.sh"}
			c.Loop.AttemptTimeout = 90 * time.Second
			c.CleanRoom.Carry = []string{"agent/agent.py", "PROGRAM.md"}
		}),

		// Only an explicit false/no/off/0/"" turns the guard off.
		"file_guard_false.yaml":             guard(false, ""),
		"file_guard_no_quoted.yaml":         guard(false, ""),
		"file_guard_zero.yaml":              guard(false, ""),
		"file_guard_empty_string.yaml":      guard(false, ""),
		"file_guard_off_upper.yaml":         guard(false, ""),
		"file_guard_no_capital.yaml":        guard(false, ""),
		"file_guard_off_single_quoted.yaml": guard(false, ""),
		"file_guard_true.yaml":              guard(true, ""),
		"file_guard_yes.yaml":               guard(true, ""),
		"file_guard_one.yaml":               guard(true, ""),
		"file_guard_typo_flase.yaml":        guard(true, `hgate.yaml:2: file_guard: "flase" is not false/no/off/0; the guard stays on`),
		"file_guard_null_tilde.yaml":        guard(true, `hgate.yaml:2: file_guard: no value is not false/no/off/0; the guard stays on`),
		"file_guard_null_bare.yaml":         guard(true, `hgate.yaml:2: file_guard: no value is not false/no/off/0; the guard stays on`),
		"file_guard_list.yaml":              guard(true, `hgate.yaml:2: file_guard: a list is not false/no/off/0; the guard stays on`),
		"file_guard_mapping.yaml":           guard(true, `hgate.yaml:2: file_guard: a mapping is not false/no/off/0; the guard stays on`),
		"file_guard_zero_float.yaml":        guard(true, `hgate.yaml:2: file_guard: 0.0 is not false/no/off/0; the guard stays on`),
	}

	files, err := filepath.Glob("testdata/valid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, path := range files {
		name := filepath.Base(path)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			want, ok := tests[name]
			if !ok {
				t.Fatalf("no expectation for %s: add it to the table", path)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Parse(FileName, testDir, data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Errorf("Parse(%s)\n got %+v\nwant %+v", name, *got, want)
			}
		})
	}
	for name := range tests {
		if !seen[name] {
			t.Errorf("table names %s, which is not in testdata/valid", name)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no fixtures in testdata/invalid")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := Parse(FileName, testDir, data)
			if err == nil {
				t.Fatalf("Parse accepted %s: %+v", path, cfg)
			}
			if cfg != nil {
				t.Errorf("Parse returned a config along with the error")
			}
			got := err.Error() + "\n"
			golden.Check(t, strings.TrimSuffix(path, ".yaml")+".err", got)
			for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				if !strings.HasPrefix(line, FileName+":") {
					t.Errorf("line does not start with the file name: %q", line)
				}
			}
		})
	}
}

// TestParseNoGoTypeNames guards the rule that users never see Go's vocabulary.
func TestParseNoGoTypeNames(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.err")
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, word := range []string{"!!str", "!!int", "!!map", "!!seq", "unmarshal", "int64", "float64", "[]string", "time.Duration", "yaml.Node"} {
			if strings.Contains(string(data), word) {
				t.Errorf("%s mentions %q", path, word)
			}
		}
	}
}

func TestParseKeepsFileName(t *testing.T) {
	_, err := Parse("custom.yml", testDir, []byte("allow: [a]\nbenchmark: {tasks: {glob: x}, run: [sh]}\nbogus: 1\n"))
	want := "custom.yml:3: bogus: unknown key (expected one of: allow, ignore, workspace, file_guard, benchmark, split, suite, gate, loop, clean_room)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func TestDefaults(t *testing.T) {
	c := Default()
	checks := []struct {
		name      string
		got, want any
	}{
		{"concurrency", c.Benchmark.Concurrency, runtime.NumCPU()},
		{"task_timeout", c.Benchmark.TaskTimeout, 20 * time.Minute},
		{"timeout_policy", c.Benchmark.TimeoutPolicy, "agent"},
		{"test_fraction", c.Split.TestFraction, 0.3},
		{"seed", c.Split.Seed, int64(42)},
		{"threshold", c.Suite.Threshold, 0.8},
		{"workspace", c.Workspace, "workspace"},
		{"file_guard", c.FileGuard, true},
		{"loop.program", c.Loop.Program, "PROGRAM.md"},
		{"loop.attempt_timeout", c.Loop.AttemptTimeout, 30 * time.Minute},
		{"loop.patience", c.Loop.Patience, 5},
		{"loop.repair_attempts", c.Loop.RepairAttempts, 1},
		{"loop.max_consecutive_crashes", c.Loop.MaxConsecutiveCrashes, 3},
		{"loop.iterations", c.Loop.Iterations, 0},
		{"loop.stop_score", c.Loop.StopScore, (*float64)(nil)},
		{"clean_room.enabled", c.CleanRoom.Enabled, true},
	}
	for _, tc := range checks {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("default %s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

func TestParseDir(t *testing.T) {
	dir := t.TempDir()
	data := "allow: [agent.py]\nworkspace: state\nbenchmark: {tasks: {glob: \"t/*\"}, run: [sh, \"t/{task}\"]}\n"
	cfg, err := Parse(FileName, dir, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dir != dir {
		t.Errorf("Dir = %q, want %q", cfg.Dir, dir)
	}
	if cfg.File != FileName {
		t.Errorf("File = %q", cfg.File)
	}
	if want := filepath.Join(dir, "state"); cfg.WorkspaceDir() != want {
		t.Errorf("WorkspaceDir() = %q, want %q", cfg.WorkspaceDir(), want)
	}
	if _, err := Parse("other.yaml", dir, []byte("allow: [a]\n  bad")); err == nil || !strings.HasPrefix(err.Error(), "other.yaml:") {
		t.Errorf("errors must name the file, got %v", err)
	}
}

func TestClosest(t *testing.T) {
	tests := []struct {
		key, want string
	}{
		{"concurency", "concurrency"},
		{"concurrrency", "concurrency"},
		{"task-timeout", "task_timeout"},
		{"TaskTimeout", "task_timeout"},
		{"tasks", "tasks"},
		{"taks", "tasks"}, {"tsak", ""}, {"bach", "batch"},
		{"btach", "batch"},
		{"colour", ""},
		{"rn", "run"},
		{"", ""},
		{"timeout", ""},
	}
	for _, tc := range tests {
		if got := closest(tc.key, benchmarkKeys); got != tc.want {
			t.Errorf("closest(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"abc", "abc", 0},
		{"abc", "acb", 1},
		{"kitten", "sitting", 3},
		{"concurency", "concurrency", 1},
		{"ca", "abc", 3},
	}
	for _, tc := range tests {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestClockTime(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"07:00", "07:00", true},
		{"7:00", "07:00", true},
		{"23:59", "23:59", true},
		{"00:00", "00:00", true},
		{"24:00", "", false},
		{"12:60", "", false},
		{"7pm", "", false},
		{"0700", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := clockTime(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("clockTime(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, dir := range []string{"testdata/valid", "testdata/invalid"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		sort.Strings(files)
		for _, path := range files {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(FileName, testDir, data)
		if err != nil {
			if cfg != nil {
				t.Errorf("config returned along with an error")
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, FileName+":") {
					t.Errorf("error line does not start with the file name: %q", line)
				}
			}
			return
		}
		// Whatever parses must satisfy the documented invariants.
		switch {
		case len(cfg.Allow) == 0:
			t.Errorf("accepted an empty allow list")
		case kinds(cfg.Benchmark) != 1:
			t.Errorf("accepted run %q, batch %q and harbor %v", cfg.Benchmark.Run, cfg.Benchmark.Batch, cfg.Benchmark.Harbor)
		case cfg.Benchmark.Concurrency < 1:
			t.Errorf("accepted concurrency %d", cfg.Benchmark.Concurrency)
		case cfg.Benchmark.TaskTimeout <= 0:
			t.Errorf("accepted task_timeout %v", cfg.Benchmark.TaskTimeout)
		case cfg.Split.TestFraction <= 0 || cfg.Split.TestFraction >= 1:
			t.Errorf("accepted test_fraction %v", cfg.Split.TestFraction)
		case cfg.Suite.Threshold < 0 || cfg.Suite.Threshold > 1:
			t.Errorf("accepted threshold %v", cfg.Suite.Threshold)
		case cfg.Workspace == "" || cfg.Workspace == "." || cfg.Workspace == ".." || strings.HasPrefix(cfg.Workspace, "../") || filepath.IsAbs(cfg.Workspace):
			t.Errorf("accepted workspace %q", cfg.Workspace)
		}
		for _, w := range cfg.Warnings {
			if !strings.HasPrefix(w, FileName+":") {
				t.Errorf("warning does not start with the file name: %q", w)
			}
		}
	})
}

func BenchmarkParse(b *testing.B) {
	data, err := os.ReadFile("testdata/valid/full.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(FileName, testDir, data); err != nil {
			b.Fatal(err)
		}
	}
}

// kinds counts how many of run, batch and harbor a benchmark sets.
func kinds(b Benchmark) int {
	n := 0
	for _, set := range []bool{len(b.Run) > 0, len(b.Batch) > 0, b.Harbor != nil} {
		if set {
			n++
		}
	}
	return n
}

// TestGateDecide: gate.trials: auto's decision; explicit trials and an explicit margin win.
func TestGateDecide(t *testing.T) {
	auto := Default().Gate
	explicit := Gate{TrialsMin: 3, TrialsMax: 5, Confidence: 0.95}
	margin := auto
	margin.Margin, margin.MarginSet = 0.01, true
	tests := []struct {
		name  string
		g     Gate
		noisy bool
		want  Gate
	}{
		{"auto deterministic", auto, false, auto},
		{"auto noisy", auto, true, Gate{TrialsAuto: true, TrialsMin: 2, TrialsMax: 8, Margin: 0.025, Confidence: 0.95}},
		{"auto noisy, margin set", margin, true, Gate{TrialsAuto: true, TrialsMin: 2, TrialsMax: 8, Margin: 0.01, MarginSet: true, Confidence: 0.95}},
		{"explicit", explicit, true, explicit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.g
			g.Decide(tt.noisy)
			if g != tt.want {
				t.Errorf("Decide(%v) = %+v, want %+v", tt.noisy, g, tt.want)
			}
			if g.Noisy() != (tt.want.TrialsMax > 1 || tt.want.Margin > 0) {
				t.Errorf("Noisy() = %v", g.Noisy())
			}
		})
	}
}
