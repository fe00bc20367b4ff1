//go:build unix

package benchmark

import (
	"context"
	"fmt"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/sandbox"
)

// BenchmarkOverheadPerTask measures what the runner adds to each task
// (process group, pipes, trace, scoring, pool) over a bare
// exec.Command("true").Run(), both measured in the same run, one task at a
// time. Target: under 5 ms/task.
func BenchmarkOverheadPerTask(b *testing.B) {
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%02d", i)
	}
	traces := b.TempDir()
	r := &Runner{Dir: b.TempDir(), Config: config.Benchmark{
		Run: []string{"true"}, Concurrency: 1, TaskTimeout: time.Minute,
	}}
	var runner, direct time.Duration
	for b.Loop() {
		start := time.Now()
		out, err := r.Run(context.Background(), Request{Split: "train", Tasks: ids, TraceDir: traces})
		if err != nil || len(out.Results) != n {
			b.Fatalf("Run: %v", err)
		}
		runner += time.Since(start)

		start = time.Now()
		for range ids {
			if err := exec.Command("true").Run(); err != nil {
				b.Fatal(err)
			}
		}
		direct += time.Since(start)
	}
	tasks := float64(b.N * n)
	b.ReportMetric(float64(runner-direct)/float64(time.Millisecond)/tasks, "ms/task-overhead")
	b.ReportMetric(float64(runner)/float64(time.Millisecond)/tasks, "ms/task-runner")
	b.ReportMetric(float64(direct)/float64(time.Millisecond)/tasks, "ms/task-direct")
}

// BenchmarkSandboxPerTask runs the same trivial tasks with and without the
// Landlock sandbox (Reap, a private TMPDIR each) in one run and reports what
// the sandbox adds per task. Target: under 5 ms/task.
func BenchmarkSandboxPerTask(b *testing.B) {
	if _, err := sandbox.Available(); err != nil {
		b.Skipf("no sandbox here: %v", err)
	}
	const n = 20
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("t%02d", i)
	}
	bench := config.Benchmark{Run: []string{"true"}, Concurrency: 1, TaskTimeout: time.Minute}
	dir := b.TempDir()
	plain := &Runner{Dir: dir, Config: bench, TempRoot: b.TempDir()}
	boxed := &Runner{Dir: dir, Config: bench, TempRoot: b.TempDir(), Sandbox: &sandbox.Policy{Write: []string{b.TempDir()}}}
	// Wall time follows the machine's load; the CPU time of the children (shims and
	// tasks) says what the sandbox costs in work.
	var without, with, cpuWithout, cpuWith time.Duration
	for b.Loop() {
		for _, r := range []*Runner{plain, boxed} {
			cpu0 := childCPU()
			start := time.Now()
			out, err := r.Run(context.Background(), Request{Split: "train", Tasks: ids})
			if err != nil || len(out.Results) != n {
				b.Fatalf("Run: %v", err)
			}
			for _, res := range out.Results {
				if !res.Passed() {
					b.Fatalf("%s: %v %s", res.Task, res.Reward, res.Reason)
				}
			}
			if r == plain {
				without += time.Since(start)
				cpuWithout += childCPU() - cpu0
			} else {
				with += time.Since(start)
				cpuWith += childCPU() - cpu0
			}
		}
	}
	tasks := float64(b.N * n)
	b.ReportMetric(float64(with-without)/float64(time.Millisecond)/tasks, "ms/task-added")
	b.ReportMetric(float64(with)/float64(without), "ratio-sandboxed")
	b.ReportMetric(float64(without)/float64(time.Millisecond)/tasks, "ms/task-unsandboxed")
	b.ReportMetric(float64(cpuWith-cpuWithout)/float64(time.Millisecond)/tasks, "cpu-ms/task-added")
}

// childCPU is the user and system time of this process's reaped children.
func childCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
