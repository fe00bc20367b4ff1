package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/gittest"
)

// schedRepo commits a benchmark of n tasks that each sleep d, at the given concurrency, with
// one trial per test task (prepare then runs each task once).
func schedRepo(b *testing.B, dir string, n, concurrency int, d time.Duration) {
	var ids strings.Builder
	for i := range n {
		fmt.Fprintf(&ids, "t%02d\n", i)
	}
	files := map[string]string{
		".gitignore": "/workspace/\n",
		"agent.sh":   "\n",
		"tasks.txt":  ids.String(),
		"hgate.yaml": fmt.Sprintf("allow: [agent.sh]\nbenchmark:\n  tasks: {file: tasks.txt}\n  run: [sleep, %q]\n  concurrency: %d\nsplit:\n  test_fraction: 0.3\ngate:\n  trials: {min: 1, max: 1}\n",
			strconv.FormatFloat(d.Seconds(), 'f', -1, 64), concurrency),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "sleep tasks"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, gittest.Env()
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, msg)
		}
	}
}

// schedRun is one `hgate bench`: its wall time, its CPU and its tasks' marks.
type schedRun struct {
	wall                   time.Duration
	ownCPU, childCPU       time.Duration
	started, gone          []time.Duration // each task's marks, from hgate's start, sorted
	firstStarted, lastGone time.Duration
}

// runSched runs `hgate bench` with its timeline on and reads what it took.
func runSched(b *testing.B, dir, hgate string, concurrency int) schedRun {
	cmd := exec.Command(hgate, "bench")
	cmd.Dir = dir
	cmd.Env = append(gittest.Env(), "HGATE_TIMELINE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	own, children, err := exitCPU(cmd.Process.Pid)
	werr := cmd.Wait()
	wall := time.Since(start)
	if werr != nil || err != nil {
		b.Fatalf("hgate bench: %v, %v\n%s", werr, err, stderr.String())
	}
	r := schedRun{wall: wall, ownCPU: own, childCPU: children}
	r.started, r.gone = marks(stderr.Bytes(), "started"), marks(stderr.Bytes(), "processes gone")
	if len(r.started) <= concurrency || len(r.started) != len(r.gone) {
		b.Fatalf("hgate bench: %d tasks started, %d ended in its timeline\n%s", len(r.started), len(r.gone), stderr.String())
	}
	r.firstStarted, r.lastGone = r.started[0], r.gone[len(r.gone)-1]
	return r
}

// marks returns the times of the timeline's task events named event, sorted.
func marks(stderr []byte, event string) []time.Duration {
	var out []time.Duration
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[1] != "timeline" || f[3] != "task" || !strings.HasSuffix(sc.Text(), ": "+event) {
			continue
		}
		if s, err := strconv.ParseFloat(f[2], 64); err == nil {
			out = append(out, time.Duration(s*float64(time.Second)))
		}
	}
	slices.Sort(out)
	return out
}

// gaps are the times from each task's end to the start of the task that took its slot:
// with equal tasks, the i-th end frees the slot of the (i+concurrency)-th start.
func (r schedRun) gaps(concurrency int) []time.Duration {
	var out []time.Duration
	for i := 0; i+concurrency < len(r.started); i++ {
		out = append(out, r.started[i+concurrency]-r.gone[i])
	}
	return out
}

// reportSched reports the medians over the runs.
func reportSched(b *testing.B, runs []schedRun, bound time.Duration, concurrency int) {
	pick := func(f func(schedRun) time.Duration) time.Duration {
		var ds []time.Duration
		for _, r := range runs {
			ds = append(ds, f(r))
		}
		return median(ds)
	}
	var gaps []time.Duration
	for _, r := range runs {
		gaps = append(gaps, r.gaps(concurrency)...)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	wall := pick(func(r schedRun) time.Duration { return r.wall })
	b.ReportMetric(ms(wall), "ms")
	b.ReportMetric(float64(wall)/float64(bound), "x-lower-bound")
	b.ReportMetric(ms(median(gaps)), "ms-between-tasks")
	b.ReportMetric(ms(pick(func(r schedRun) time.Duration { return r.firstStarted })), "ms-to-first-task")
	b.ReportMetric(ms(pick(func(r schedRun) time.Duration { return r.wall - r.lastGone })), "ms-after-last-task")
	b.ReportMetric(ms(pick(func(r schedRun) time.Duration { return r.ownCPU })), "hgate-cpu-ms")
	b.ReportMetric(ms(pick(func(r schedRun) time.Duration { return r.childCPU })), "tasks-cpu-ms")
}
