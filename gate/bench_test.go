package gate

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

const benchConcurrency = 4

// lowerBound is the least wall time tasks of the given durations can take on a pool of
// the given size: the longest task, or the total work spread over every worker.
func lowerBound(d []time.Duration, concurrency int) time.Duration {
	var total, longest time.Duration
	for _, x := range d {
		total += x
		longest = max(longest, x)
	}
	return max(longest, total/time.Duration(concurrency))
}

// gateFixture is a prepared repository whose tasks sleep for known durations. Every train
// task but three is in the suite; those three failed at "baseline", so Step 3 re-runs them
// on every gate.
type gateFixture struct {
	repo      *gittest.Repo
	env       *Env
	durations map[string]time.Duration
	suite     *suite.Suite
	test      []string
	rerun     []string
}

func newGateFixture(b *testing.B, n int, duration func(i int) time.Duration) *gateFixture {
	f := &gateFixture{durations: map[string]time.Duration{}}
	var ids []string
	var script strings.Builder
	script.WriteString("case $1 in\n")
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		f.durations[id] = duration(i)
		ids = append(ids, id)
		if d := duration(i); d > 0 {
			fmt.Fprintf(&script, "%s) sleep %.3f ;;\n", id, d.Seconds())
		}
	}
	script.WriteString("esac\n")
	f.repo = gittest.New(b)
	f.repo.WriteFiles(map[string]string{
		"hgate.yaml": fmt.Sprintf("allow: [agent.sh]\nbenchmark:\n  tasks: {file: tasks.txt}\n  run: [sh, task.sh, \"{task}\"]\n  concurrency: %d\n", benchConcurrency),
		".gitignore": "/workspace/\n",
		"tasks.txt":  strings.Join(ids, "\n") + "\n",
		"task.sh":    script.String(),
		"agent.sh":   "\n",
	})
	f.repo.Commit("init")
	r, err := gitguard.Open(f.repo.Dir)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := LoadConfig(r, "hgate.yaml", io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	f.env = &Env{Config: cfg, Repo: r, CleanRoom: true}
	if _, err := Prepare(context.Background(), f.env); err != nil {
		b.Fatal(err)
	}
	sp, err := store{f.env}.loadSplit()
	if err != nil {
		b.Fatal(err)
	}
	f.test, f.rerun = sp.Test, sp.Train[:3]
	f.suite = suite.New(0.8)
	f.suite.Promote(sp.Train[3:]...)
	tr := &suite.TrainResults{Split: "train", Timestamp: statefile.Timestamp(time.Now()), Results: map[string]*float64{}}
	for _, id := range sp.Train {
		v := 1.0
		if slices.Contains(f.rerun, id) {
			v = 0
		}
		tr.Results[id] = &v
	}
	c := changes{}
	if err := c.add(workspace.TrainResults, tr.Marshal); err != nil {
		b.Fatal(err)
	}
	// Step 3 takes its candidates from the gate's baseline record.
	if err := c.add(workspace.Baseline, sealedBaseline(heldOut(f.env), &Baseline{TrainFailing: f.rerun})); err != nil {
		b.Fatal(err)
	}
	if err := (store{f.env}).apply("benchmark set-up", c); err != nil {
		b.Fatal(err)
	}
	return f
}

// gate runs one gate from the fixture's starting suite and returns its wall time.
func (f *gateFixture) gate(b *testing.B) time.Duration {
	c := changes{}
	if err := c.add(workspace.Suite, f.suite.Marshal); err != nil {
		b.Fatal(err)
	}
	if err := (store{f.env}).apply("benchmark reset", c); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	// Rerun: the same tree is gated each time, and its test split must run each time.
	rep, err := Run(context.Background(), f.env, Options{Rerun: true})
	wall := time.Since(start)
	if err != nil || !rep.Passed() || len(rep.Steps.Step3.Promoted) != len(f.rerun) {
		b.Fatalf("gate: %v, %+v", err, rep)
	}
	return wall
}

// bare runs the same commands as the gate, in the same shape (Steps 1 and 2 on one pool,
// then Step 3), with nothing but a pool of goroutines around exec.
func (f *gateFixture) bare(b *testing.B) time.Duration {
	run := func(tasks []string) {
		sem := make(chan struct{}, benchConcurrency)
		var wg sync.WaitGroup
		for _, id := range tasks {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				cmd := exec.Command("sh", "task.sh", id)
				cmd.Dir = f.repo.Dir
				if err := cmd.Run(); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	start := time.Now()
	run(append(slices.Clone(f.suite.Tasks), f.test...))
	run(f.rerun)
	return time.Since(start)
}

// BenchmarkGateSchedule measures the gate's wall time on sleep tasks of known durations
// (0.2 to 1 s) and reports it against
//   - ratio-vs-lower-bound: the least time any scheduler could take, max(longest task,
//     total task time / concurrency) for Steps 1 and 2 together, plus the same for Step 3,
//     which can only start once both have passed (target <= 1.10);
//   - ratio-vs-sequential: Steps 1, 2 and 3 run one after another on the same pool, the
//     order auto-harness uses, measured in the same run.
func BenchmarkGateSchedule(b *testing.B) {
	f := newGateFixture(b, 24, func(i int) time.Duration { return time.Duration(200*(1+i%5)) * time.Millisecond })
	var d12, d3 []time.Duration
	for _, id := range append(slices.Clone(f.suite.Tasks), f.test...) {
		d12 = append(d12, f.durations[id])
	}
	for _, id := range f.rerun {
		d3 = append(d3, f.durations[id])
	}
	bound := lowerBound(d12, benchConcurrency) + lowerBound(d3, benchConcurrency)
	var gateWall, seqWall time.Duration
	for b.Loop() {
		gateWall += f.gate(b)
		runner := f.env.rooms().InRepo(nil)
		start := time.Now()
		for _, tasks := range [][]string{f.suite.Tasks, f.test, f.rerun} {
			if _, err := runner.Run(context.Background(), benchmark.Request{Split: "train", Tasks: tasks}); err != nil {
				b.Fatal(err)
			}
		}
		seqWall += time.Since(start)
	}
	b.ReportMetric(float64(gateWall)/float64(b.N)/float64(bound), "ratio-vs-lower-bound")
	b.ReportMetric(float64(gateWall)/float64(seqWall), "ratio-vs-sequential")
}

// BenchmarkGateOverhead measures what hgate itself costs per task — guard, clean room,
// ledger, traces, scoring — on tasks that do nothing: the gate's wall time above that of
// a bare pool of goroutines running the same commands in the same shape, measured in the
// same run, times the pool size, per task (target < 5 ms).
func BenchmarkGateOverhead(b *testing.B) {
	f := newGateFixture(b, 40, func(int) time.Duration { return 0 })
	tasks := len(f.suite.Tasks) + len(f.test) + len(f.rerun)
	var gateWall, bareWall time.Duration
	for b.Loop() {
		gateWall += f.gate(b)
		bareWall += f.bare(b)
	}
	b.ReportMetric(float64(gateWall-bareWall)/float64(b.N)*benchConcurrency/float64(tasks)/1e6, "overhead-ms/task")
	b.ReportMetric(float64(gateWall)/float64(bareWall), "ratio-vs-bare-pool")
}
