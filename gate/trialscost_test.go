package gate

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// trialsRepo is a prepared repository over a deterministic benchmark: 20 tasks that each
// take 50 ms, the even ones passing, under the given gate: section.
func trialsRepo(b *testing.B, gateSection string) *Env {
	var ids []string
	for i := range 20 {
		ids = append(ids, fmt.Sprintf("t%02d", i))
	}
	repo := gittest.New(b)
	repo.WriteFiles(map[string]string{
		"hgate.yaml": "allow: [agent.sh]\nbenchmark:\n  tasks: {file: tasks.txt}\n  run: [sh, task.sh, \"{task}\"]\n  concurrency: 2\n" + gateSection,
		".gitignore": "/workspace/\n",
		"tasks.txt":  strings.Join(ids, "\n") + "\n",
		"task.sh":    "sleep 0.05\ncase $1 in *[02468]) exit 0 ;; esac\nexit 1\n",
		"agent.sh":   "\n",
	})
	repo.Commit("init")
	r, err := gitguard.Open(repo.Dir)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := LoadConfig(r, "hgate.yaml", io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	e := &Env{Config: cfg, Repo: r, CleanRoom: true}
	if _, err := Prepare(context.Background(), e); err != nil {
		b.Fatal(err)
	}
	return e
}

// gateFresh gates a do-nothing change (a new comment in agent.sh: a fresh tree, so no
// score is reused) and returns its wall time and the trials it ran per test task.
func gateFresh(b *testing.B, e *Env, n int) (time.Duration, int) {
	if err := os.WriteFile(filepath.Join(e.Repo.Root(), "agent.sh"), fmt.Appendf(nil, "# %d\n", n), 0o644); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	rep, err := Run(context.Background(), e, Options{})
	wall := time.Since(start)
	if err != nil || !rep.Passed() {
		b.Fatalf("gate: %v, %+v", err, rep)
	}
	return wall, max(rep.Steps.Step2.Trials, 1)
}

// BenchmarkTrialsCost is a deterministic benchmark's cost of trials, next to
// NoiseSimulation's table: the same do-nothing change gated under gate.trials: auto
// (which chooses one trial here), under {min: 2, max: 8} with margin 0.025, and under one
// trial, interleaved. It reports each as a ratio of the one-trial gate's wall time, and
// the trials per test task each ran (auto: 1; {2, 8}: 2, the second round repeating the
// first).
func BenchmarkTrialsCost(b *testing.B) {
	one := trialsRepo(b, "gate: {trials: {min: 1, max: 1}}\n")
	auto := trialsRepo(b, "")
	on := trialsRepo(b, "gate: {trials: {min: 2, max: 8}, margin: 0.025}\n")
	if auto.Config.Gate.TrialsMax != 1 {
		b.Fatalf("auto chose %d..%d trials on a deterministic benchmark", auto.Config.Gate.TrialsMin, auto.Config.Gate.TrialsMax)
	}
	var wOne, wAuto, wOn time.Duration
	var tAuto, tOn int
	n := 0
	for b.Loop() {
		n++
		w, _ := gateFresh(b, one, n)
		wOne += w
		w, t := gateFresh(b, auto, n)
		wAuto, tAuto = wAuto+w, tAuto+t
		w, t = gateFresh(b, on, n)
		wOn, tOn = wOn+w, tOn+t
	}
	b.ReportMetric(float64(wAuto)/float64(wOne), "auto-x-one-trial")
	b.ReportMetric(float64(wOn)/float64(wOne), "trials2..8-x-one-trial")
	b.ReportMetric(float64(tAuto)/float64(n), "auto-trials/task")
	b.ReportMetric(float64(tOn)/float64(n), "trials2..8-trials/task")
}
