package gate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// BenchmarkGuardCost measures what gate.keep_passing and trials: auto's further prepare
// runs cost, each as a ratio against a baseline timed in the same run: prepare under
// trials: auto (the test split four times) against prepare with one trial written out;
// a gate with keep_passing on against the same gate with it off (medians of alternating
// gates, each of a new tree that changes nothing). On the bundled example (44 sh tasks, in
// the clean room) and on a Go-exercises-like benchmark built here (16 packages, each its
// own go test -count=1, half solved at baseline).
func BenchmarkGuardCost(b *testing.B) {
	benches := []struct {
		name  string
		build func(b *testing.B, extraYAML string) (*gittest.Repo, *Env, string)
	}{
		{"example", exampleRepo},
		{"go-exercises", goExercisesRepo},
	}
	if only := os.Getenv("HGATE_COST_ONLY"); only != "" {
		benches = slices.DeleteFunc(benches, func(x struct {
			name  string
			build func(b *testing.B, extraYAML string) (*gittest.Repo, *Env, string)
		}) bool {
			return x.name != only
		})
	}
	gates := envInt("HGATE_COST_GATES", 3)
	for range b.N {
		for _, bench := range benches {
			one := timePrepare(b, bench.build, "gate: {trials: {min: 1, max: 1}}\n")
			auto := timePrepare(b, bench.build, "")
			_, e, allowed := bench.build(b, "gate: {trials: {min: 1, max: 1}}\n")
			if _, err := Prepare(context.Background(), e); err != nil {
				b.Fatal(err)
			}
			var off, on []time.Duration
			for i := range 2 * gates {
				keep := i%2 == 1
				e.Config.Gate.KeepPassing = &keep
				comment := "#" // sh
				if filepath.Ext(allowed) == ".go" {
					comment = "//"
				}
				os.WriteFile(allowed, fmt.Appendf(readAll(b, allowed), "\n%s %d\n", comment, i), 0o644)
				start := time.Now()
				rep, err := Run(context.Background(), e, Options{})
				if err != nil || !rep.Passed() {
					b.Fatalf("gate %d: %v %+v", i, err, rep)
				}
				if keep {
					on = append(on, time.Since(start))
				} else {
					off = append(off, time.Since(start))
				}
			}
			prep, guard := float64(auto)/float64(one), float64(median(on))/float64(median(off))
			fmt.Fprintf(os.Stdout, "%s: prepare %v (one trial) vs %v (auto: test split four times) = %.2fx; gate %v (keep_passing off) vs %v (on) = %.2fx\n",
				bench.name, one.Round(time.Millisecond), auto.Round(time.Millisecond), prep, median(off).Round(time.Millisecond), median(on).Round(time.Millisecond), guard)
			b.ReportMetric(prep, bench.name+"-prepare-x")
			b.ReportMetric(guard, bench.name+"-gate-x")
		}
	}
}

func timePrepare(b *testing.B, build func(*testing.B, string) (*gittest.Repo, *Env, string), yaml string) time.Duration {
	_, e, _ := build(b, yaml)
	start := time.Now()
	if _, err := Prepare(context.Background(), e); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func readAll(b *testing.B, path string) []byte {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func benchEnv(b *testing.B, repo *gittest.Repo, cleanRoom bool) *Env {
	r, err := gitguard.Open(repo.Dir)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := LoadConfig(r, "hgate.yaml", io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	return &Env{Config: cfg, Repo: r, CleanRoom: cleanRoom}
}

// exampleRepo is workspace.example in a repository of its own.
func exampleRepo(b *testing.B, extraYAML string) (*gittest.Repo, *Env, string) {
	b.Setenv("TMPDIR", b.TempDir())
	repo := gittest.New(b)
	if err := os.CopyFS(repo.Dir, os.DirFS(filepath.Join("..", "workspace.example"))); err != nil {
		b.Fatal(err)
	}
	// The example's 3 s task timeout shows its hanging candidate cheaply; on a loaded
	// machine it would time out honest tasks.
	yaml := strings.Replace(string(readAll(b, repo.Path("hgate.yaml"))), "task_timeout: 3s", "task_timeout: 2m", 1)
	repo.WriteFiles(map[string]string{"hgate.yaml": yaml + extraYAML, ".gitignore": "/workspace/\n"})
	repo.Commit("example")
	return repo, benchEnv(b, repo, true), repo.Path("agent/agent.sh")
}

// goExercisesRepo is a benchmark shaped like Aider's polyglot Go exercises: one package per
// task, each task `go test -count=1` of its package, half solved at baseline.
func goExercisesRepo(b *testing.B, extraYAML string) (*gittest.Repo, *Env, string) {
	b.Setenv("TMPDIR", b.TempDir())
	repo := gittest.New(b)
	files := map[string]string{
		"go.mod":      "module ex\n\ngo 1.22\n",
		".gitignore":  "/workspace/\n",
		"solution.go": "package ex\n\n// Solved reports whether the agent solved task n.\nfunc Solved(n int) bool { return n%2 == 0 }\n",
		"hgate.yaml": "allow: [solution.go]\nbenchmark:\n  tasks: {glob: \"exercise/*\"}\n  run: [go, test, -count=1, \"./exercise/{task}\"]\n  concurrency: 2\n  task_timeout: 2m\n" +
			"clean_room: {enabled: false}\n" + extraYAML,
	}
	for i := 1; i <= 16; i++ {
		files[fmt.Sprintf("exercise/e%02d/e_test.go", i)] = fmt.Sprintf("package e\n\nimport (\n\t\"testing\"\n\n\tex \"ex\"\n)\n\nfunc TestE(t *testing.T) {\n\tif !ex.Solved(%d) {\n\t\tt.Fatal(\"not solved\")\n\t}\n}\n", i)
	}
	repo.WriteFiles(files)
	repo.Commit("exercises")
	return repo, benchEnv(b, repo, false), repo.Path("solution.go")
}
