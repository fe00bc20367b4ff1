package hooks_test

import (
	"os"
	"os/exec"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/hooks"
	"github.com/hgate/hgate/internal/gittest"
)

// The generated repository is shared by the framework's repeated calls of a benchmark
// and removed by TestMain.
var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
)

func TestMain(m *testing.M) {
	removeTemp := gittest.MemoryTemp()
	code := m.Run()
	gittest.RemoveTemplates()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	removeTemp()
	os.Exit(code)
}

// gitDiffCachedTime is the wall time of one git diff --cached --name-only.
func gitDiffCachedTime(b *testing.B, dir string) time.Duration {
	cmd := exec.Command("git", "diff", "--cached", "--name-only")
	cmd.Dir = dir
	cmd.Env = gittest.Env()
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil || string(out) != "agent.py\nsrc/d007/s03/f05.go\n" {
		b.Fatalf("git diff --cached: %v %q", err, out)
	}
	return d
}

// BenchmarkPreCommitHook measures the work of "hgate hooks run pre-commit" on a
// 10k-file repository (open the repository, read hgate.yaml from HEAD, read the index,
// compare it with HEAD), in process, against git diff --cached --name-only run
// interleaved in the same loop. Reported: ms/op for hgate, git-ms/op, and the ratio.
func BenchmarkPreCommitHook(b *testing.B) {
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "hgate-hooks-bench-")
		if benchErr == nil {
			gittest.LargeStaged(b, benchDir, 10000)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	run := func() {
		repo, err := gitguard.Open(benchDir)
		if err != nil {
			b.Fatal(err)
		}
		// As the command line does: hgate.yaml from the gated commit, else HEAD.
		head, _, err := repo.Head()
		if err != nil {
			b.Fatal(err)
		}
		data, err := repo.FileAt(head, config.FileName)
		if err != nil {
			b.Fatal(err)
		}
		cfg, err := config.Parse(config.FileName, repo.Root(), data)
		if err != nil {
			b.Fatal(err)
		}
		vs, err := hooks.PreCommit(repo, cfg.Allow, os.Getenv(hooks.IndexFileEnv))
		if err != nil || len(vs) != 0 {
			b.Fatalf("pre-commit: %v %v", err, vs)
		}
	}
	run() // warm the page cache for both
	gitDiffCachedTime(b, benchDir)
	var ours, theirs []time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		run()
		ours = append(ours, time.Since(start))
		b.StopTimer()
		theirs = append(theirs, gitDiffCachedTime(b, benchDir))
		b.StartTimer()
	}
	b.StopTimer()
	med := func(ds []time.Duration) time.Duration {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return ds[len(ds)/2]
	}
	o, g := med(ours), med(theirs)
	b.ReportMetric(float64(o.Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(g.Microseconds())/1000, "git-median-ms")
	b.ReportMetric(float64(o)/float64(g), "ratio-vs-git")
}
