package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/gittest"
)

// Benchmarks of hgate as users run it: the binary `go build` makes, started as a
// process, timed against a baseline process started alternately in the same loop (so
// both see the same machine load). Reported: the median of each and the ratio of the
// medians.

// BenchmarkVersion: `hgate --version` against a hello-world Go binary built here: what
// every command pays before it starts. Goal ≤ 1.5×.
func BenchmarkVersion(b *testing.B) {
	hgate, hello := buildHgate(b), buildHello(b)
	compare(b, "x-hello", b.TempDir(), []string{hgate, "--version"}, []string{hello}, 0)
}

// BenchmarkGuard: `hgate guard` against `git status --porcelain -uall` on 10k tracked
// and 20k ignored files. Goal ≤ 0.9× (the guard hashes every counted file: see
// Performance in the README).
func BenchmarkGuard(b *testing.B) {
	hgate := buildHgate(b)
	dir := b.TempDir()
	gittest.Large(b, dir, 10000, 20000)
	commitConfig(b, dir, "allow: [src/d000/]\nbenchmark:\n  tasks: {glob: \"tasks/*\"}\n  run: [sh, check.sh]\n")
	compare(b, "x-git-status", dir, []string{hgate, "guard"}, []string{"git", "status", "--porcelain", "-uall"}, 0)
}

// BenchmarkGuardHash: `hgate guard` against `git hash-object --stdin-paths` fed the
// tracked files' paths, on the same 10k tracked and 20k ignored files: what git takes
// only to hash the files the guard counts. Goal ≤ 0.5×.
func BenchmarkGuardHash(b *testing.B) {
	hgate := buildHgate(b)
	dir := b.TempDir()
	gittest.Large(b, dir, 10000, 20000)
	commitConfig(b, dir, "allow: [src/d000/]\nbenchmark:\n  tasks: {glob: \"tasks/*\"}\n  run: [sh, check.sh]\n")
	paths := filepath.Join(b.TempDir(), "paths")
	ls := exec.Command("git", "ls-files")
	ls.Dir, ls.Env = dir, gittest.Env()
	list, err := ls.Output()
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(paths, list, 0o644); err != nil {
		b.Fatal(err)
	}
	compare(b, "x-git-hash-object", dir, []string{hgate, "guard"}, []string{"<" + paths, "git", "hash-object", "--stdin-paths"}, 0)
}

// BenchmarkPreCommit: `hgate hooks run pre-commit` against `git diff-index --cached
// --quiet HEAD` (exit 1: there are staged changes) on 10k files. Goal ≤ 1.5×.
func BenchmarkPreCommit(b *testing.B) {
	hgate := buildHgate(b)
	dir := b.TempDir()
	gittest.LargeStaged(b, dir, 10000)
	compare(b, "x-git-diff-index", dir, []string{hgate, "hooks", "run", "pre-commit"}, []string{"git", "diff-index", "--cached", "--quiet", "HEAD"}, 1)
}

// compare runs ours (which must exit 0) and base (which must exit baseExit) alternately in
// dir and reports both medians and ours/base as the metric unit.
func compare(b *testing.B, unit, dir string, ours, base []string, baseExit int) {
	for range 3 { // warm the page cache and the binaries
		start(b, dir, ours, 0)
		start(b, dir, base, baseExit)
	}
	var o, g []time.Duration
	for b.Loop() {
		o = append(o, start(b, dir, ours, 0))
		g = append(g, start(b, dir, base, baseExit))
	}
	mo, mg := median(o), median(g)
	b.ReportMetric(float64(mo.Microseconds())/1000, "ms")
	b.ReportMetric(float64(mg.Microseconds())/1000, "base-ms")
	b.ReportMetric(float64(mo)/float64(mg), unit)
}

// start runs argv in dir and returns its wall time, from start to exit. A first
// element "<FILE" is not run: FILE is argv's standard input.
func start(b *testing.B, dir string, argv []string, wantExit int) time.Duration {
	var stdin *os.File
	if in, ok := strings.CutPrefix(argv[0], "<"); ok {
		f, err := os.Open(in)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		stdin, argv = f, argv[1:]
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = gittest.Env()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if stdin != nil {
		cmd.Stdin = stdin
	}
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		b.Fatalf("%v: %v", argv, err)
	}
	if code != wantExit {
		b.Fatalf("%v: exit %d, want %d\n%s", argv, code, wantExit, out.String())
	}
	return d
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// buildHgate builds this command the way the README installs it: CGO_ENABLED=0, a static
// binary that loads no C library at start.
func buildHgate(b *testing.B) string {
	out := filepath.Join(b.TempDir(), exe("hgate"))
	goBuild(b, ".", out, []string{"CGO_ENABLED=0"})
	return out
}

// buildHello builds a Go program that prints one line, in a module of its own.
func buildHello(b *testing.B) string {
	src := b.TempDir()
	for name, content := range map[string]string{
		"go.mod":  "module hello\n\ngo 1.21\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
	} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	out := filepath.Join(b.TempDir(), exe("hello"))
	goBuild(b, src, out, []string{"GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0"})
	return out
}

func goBuild(b *testing.B, dir, out string, env []string) {
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("go build in %s: %v\n%s", dir, err, msg)
	}
}

func exe(name string) string {
	if runtime.GOOS == "windows" {
		return name + ".exe"
	}
	return name
}

// commitConfig commits hgate.yaml, then lets git refresh the index's stat data.
func commitConfig(b *testing.B, dir, yaml string) {
	if err := os.WriteFile(filepath.Join(dir, "hgate.yaml"), []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, args := range [][]string{{"add", "hgate.yaml"}, {"commit", "-q", "-m", "hgate.yaml"}, {"status", "--porcelain"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = gittest.Env()
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, msg)
		}
	}
}

// BenchmarkBenchSchedule: `hgate bench` of 28 train tasks that each sleep 0.5 s, at
// concurrency 4, as a process (hgate-sandbox beside it, as installed), against the
// schedule's lower bound max(longest task, total / concurrency) = max(0.5 s, 28 × 0.5 s /
// 4) = 3.5 s. The bound is arithmetic, not measured: the tasks' durations are known, so no
// baseline runs. Goal ≤ 1.10× (x-lower-bound, from the median wall time). On a loaded
// machine the wall ratio is mostly the load. Also reported, from hgate's own marks
// (HGATE_TIMELINE, whose clock starts at hgate's package initialisation): ms-between-tasks,
// the median time from a task's processes gone to the next task of its lane started (its
// shim started: the shim's own set-up, up to the task's exec, counts in the task's time);
// ms-to-first-task, to the first task started; ms-after-last-task, from the last task's
// processes gone to hgate's exit; and from /proc (10 ms ticks): hgate-cpu-ms, the CPU of
// hgate's own process, outside every task's processes, and tasks-cpu-ms, that of the
// processes it started (the probes, each task's shim and the task).
func BenchmarkBenchSchedule(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: 28 tasks of 0.5 s, and a prepare before them")
	}
	const tasks, train, concurrency, sleep = 40, 28, 4, 500 * time.Millisecond
	hgate := buildHgate(b)
	goBuild(b, "../hgate-sandbox", filepath.Join(filepath.Dir(hgate), exe("hgate-sandbox")), []string{"CGO_ENABLED=0"})
	dir := b.TempDir()
	schedRepo(b, dir, tasks, concurrency, sleep)
	goexRun(b, dir, hgate, "prepare")
	var sp struct{ Train []string }
	readJSONFile(b, filepath.Join(dir, "workspace", "split.json"), &sp)
	if len(sp.Train) != train {
		b.Fatalf("split.json has %d train tasks, want %d", len(sp.Train), train)
	}
	bound := max(sleep, sleep*train/concurrency)
	var runs []schedRun
	for b.Loop() {
		runs = append(runs, runSched(b, dir, hgate, concurrency))
	}
	reportSched(b, runs, bound, concurrency)
}
