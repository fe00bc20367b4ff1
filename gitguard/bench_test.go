package gitguard_test

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// Generated repositories are shared by all runs of a benchmark (the
// framework calls a benchmark several times) and removed by TestMain.
var (
	benchMu    sync.Mutex
	benchRepos = map[string]string{}
	benchTmp   []string
)

func TestMain(m *testing.M) {
	removeTemp := gittest.MemoryTemp()
	code := m.Run()
	gittest.RemoveTemplates()
	for _, d := range benchTmp {
		os.RemoveAll(d)
	}
	removeTemp()
	os.Exit(code)
}

// benchRepo returns a committed repository with tracked files spread over
// directories of 20, plus ignored files under node_modules/.
func benchRepo(b *testing.B, tracked, ignored int) string {
	b.Helper()
	key := fmt.Sprintf("%d+%d", tracked, ignored)
	benchMu.Lock()
	defer benchMu.Unlock()
	if d, ok := benchRepos[key]; ok {
		return d
	}
	dir, err := os.MkdirTemp("", "hgate-bench-")
	if err != nil {
		b.Fatal(err)
	}
	benchTmp = append(benchTmp, dir)
	gittest.Large(b, dir, tracked, ignored)
	benchRepos[key] = dir
	return dir
}

// gitStatusTime is the median wall time of git status over runs.
func gitStatusTime(b *testing.B, dir string, runs int) time.Duration {
	var ds []time.Duration
	for i := 0; i < runs; i++ {
		cmd := exec.Command("git", "status", "--porcelain", "--untracked-files=all")
		cmd.Dir = dir
		cmd.Env = gittest.Env()
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			b.Fatalf("git status: %v %q", err, out)
		}
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func benchmarkCheck(b *testing.B, tracked, ignored int) {
	if testing.Short() && tracked > 10000 {
		b.Skip("large repository skipped in -short mode")
	}
	dir := benchRepo(b, tracked, ignored)
	opts := gitguard.Options{Allow: []string{"src/d000/"}}
	run := func() {
		g, err := gitguard.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		vs, err := g.Check(opts)
		if err != nil || len(vs) != 0 {
			b.Fatalf("check: %v %v", err, vs)
		}
	}
	run() // warm the page cache like git's warm-up
	gitStatusTime(b, dir, 2)
	// git status runs interleaved with the check, outside the timer, so
	// both see the same machine load.
	var ours, theirs time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		run()
		ours += time.Since(start)
		b.StopTimer()
		theirs += gitStatusTime(b, dir, 1)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(theirs.Nanoseconds())/float64(b.N), "git-ns/op")
	b.ReportMetric(float64(ours)/float64(theirs), "ratio-vs-git")
}

// The three repositories of the performance target: hgate's check at most
// 0.9 × `git status --porcelain --untracked-files=all`.
func BenchmarkCheck10kTracked20kIgnored(b *testing.B)  { benchmarkCheck(b, 10000, 20000) }
func BenchmarkCheck50kTracked100kIgnored(b *testing.B) { benchmarkCheck(b, 50000, 100000) }
func BenchmarkCheck100kTracked(b *testing.B)           { benchmarkCheck(b, 100000, 0) }
