//go:build unix

package benchmark

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
)

// TestRealHarbor runs the real `harbor run` over testdata/harbor-real — two tasks, run by
// Harbor's oracle agent (it runs each task's solution/solve.sh) in Docker: `solved` writes
// the answer its tests/test.sh wants, `wrong` does not — and checks what the adapter read
// from the job folder Harbor itself wrote: the rewards, the traces kept from each trial
// folder, no problem reported, nothing of the test split left. It needs harbor on PATH
// and a Docker engine (Harbor has no environment without containers), and skips saying
// which is missing.
func TestRealHarbor(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real harbor in Docker")
	}
	if _, err := exec.LookPath("harbor"); err != nil {
		t.Skip("harbor is not on PATH (uv tool install harbor): the adapter was not run against the real harbor")
	}
	if err := exec.Command("docker", "info").Run(); err != nil {
		t.Skipf("no Docker engine answers (docker info: %v): the real harbor has nothing to run the tasks in", err)
	}
	dataset, err := filepath.Abs("testdata/harbor-real")
	if err != nil {
		t.Fatal(err)
	}
	bench := config.Benchmark{
		Harbor:      &config.Harbor{Command: []string{"harbor"}, Path: filepath.Base(dataset), Agent: "oracle", Env: "docker", Concurrency: 2},
		Concurrency: 1, TaskTimeout: 10 * time.Minute,
	}
	r := &Runner{Dir: filepath.Dir(dataset), Config: bench}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	for _, split := range []string{"train", "test"} {
		t.Run(split, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			traces := ""
			if split == "train" {
				traces = filepath.Join(t.TempDir(), "traces")
			}
			out, err := r.Run(ctx, Request{Split: split, Tasks: []string{"solved", "wrong"}, TraceDir: traces})
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(out.Results["solved"]) + ", " + describe(out.Results["wrong"]); got != "1, 0" {
				t.Errorf("rewards %s, want 1, 0 (solved, wrong)", got)
			}
			if len(out.Problems) > 0 {
				t.Errorf("problems reading harbor's job folder: %q", out.Problems)
			}
			if split == "train" {
				// trial.log became <id>.log, the trial's agent/ folder <id>/.
				for _, f := range []string{"solved.log", "wrong.log", "harbor.log", "solved", "wrong"} {
					if _, err := os.Stat(filepath.Join(traces, f)); err != nil {
						t.Errorf("train trace: %v", err)
					}
				}
			}
			// The jobs folder harbor wrote into is gone once its numbers are read.
			for _, dir := range []string{tmp, traces} {
				if m, _ := filepath.Glob(filepath.Join(dir, ".harbor-jobs-*")); dir != "" && len(m) > 0 {
					t.Errorf("jobs folder left: %v", m)
				}
			}
		})
	}
}

// TestReadmeHarborRecipe parses docs/reference/benchmark.md's Terminal-Bench-through-Daytona recipe as
// hgate.yaml and builds its harbor command: every key it uses exists, and the command
// carries the flags harbor run takes (../shared/research/harbor.md, 2a).
func TestReadmeHarborRecipe(t *testing.T) {
	readme, err := os.ReadFile("../docs/reference/benchmark.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\\*\\*Recipe: Terminal-Bench 2\\.0 through Daytona.*?```yaml\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("docs/reference/benchmark.md: no yaml block after **Recipe: Terminal-Bench 2.0 through Daytona")
	}
	cfg, err := config.Parse("hgate.yaml", t.TempDir(), m[1])
	if err != nil {
		t.Fatalf("the recipe does not parse:\n%v", err)
	}
	if got := strings.Join(cfg.CleanRoom.Env, " "); got != "DAYTONA_API_KEY ANTHROPIC_API_KEY" {
		t.Errorf("clean_room.env %s", got)
	}
	if cfg.Loop.BudgetUSD != 150 || !cfg.CleanRoom.Network {
		t.Errorf("budget %v, network %v", cfg.Loop.BudgetUSD, cfg.CleanRoom.Network)
	}
	r := &Runner{Dir: "/repo", Config: cfg.Benchmark}
	jobs := t.TempDir()
	argv, err := r.harborCommand(Request{Split: "test", Tasks: []string{"fix-git"}}, jobs, "hgate-test-1-x")
	if err != nil {
		t.Fatal(err)
	}
	// A registered dataset: the agent's timeout (task_timeout, 40m) and so the agent and
	// model are in the job config.
	got := strings.Join(argv, " ")
	want := "harbor run -d terminal-bench@2.0 -c " + jobs + "/hgate-job.json -e daytona -n 27 -k 1 " +
		"--job-name hgate-test-1-x -o " + jobs + " -y --timeout-multiplier 1 -i fix-git"
	if got != want {
		t.Errorf("harbor command:\n%s\nwant:\n%s", got, want)
	}
	data, _ := os.ReadFile(filepath.Join(jobs, "hgate-job.json"))
	if string(data) != `{"agents":[{"model_name":"anthropic/claude-sonnet-4-5","name":"agent.agent:HarnessAgent","override_timeout_sec":2400}]}`+"\n" {
		t.Errorf("the job config:\n%s", data)
	}
}
