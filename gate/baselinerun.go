package gate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/internal/human"
	"github.com/hgate/hgate/internal/lazyre"
)

// brokenStatus matches a reason that ends in the exit status a shell gives a command it
// could not run: 126, found but not executable; 127, not found.
var brokenStatus = lazyre.New(`(?:^|; )exit status (12[67])$`)

// traceLines is how much of a broken command's output a refusal repeats.
const (
	traceLines    = 5
	traceLineSize = 200
)

// anyStatus matches a reason that ends in a failing exit status.
var anyStatus = lazyre.New(`(?:^|; )exit status ([0-9]+)$`)

// shells are the programs that, given a script that does not exist, exit with a status of
// their own choosing (dash, Debian's and Ubuntu's sh, says 2; bash 127).
var shells = []string{"sh", "dash", "bash", "zsh", "ksh", "mksh", "ash"}

// baselineCheck is prepare's refusal of a baseline that cannot be gated by, over the
// baseline's results, whose traces (in traceTmp) it keeps for the reasons to be read.
type baselineCheck struct {
	*Env
	results  map[string]benchmark.Result
	traceTmp string
}

// checkRuns refuses a baseline where every task failed with exit status 126 or 127, or
// because the script its shell was given does not exist in dir (the clean room): the
// benchmark's own command is broken (a typo in a script's path), and a baseline of zeros
// would gate every change against nothing. It names the command and repeats the first
// lines of one task's output; every task's trace is kept in traces/refused.
func (b baselineCheck) checkRuns(dir string, tasks []string) error {
	results, traceTmp := b.results, b.traceTmp
	if len(tasks) == 0 {
		return nil
	}
	codes := map[string]bool{}
	var gone []string // the missing scripts, as the tasks' commands name them
	for _, id := range tasks {
		if m := brokenStatus.Get().FindStringSubmatch(results[id].Reason); m != nil {
			codes[m[1]] = true
			continue
		}
		m := anyStatus.Get().FindStringSubmatch(results[id].Reason)
		script := missingScript(b.Config.Benchmark.Run, dir, id)
		if m == nil || script == "" {
			return nil
		}
		codes[m[1]] = true
		if !slices.Contains(gone, script) {
			gone = append(gone, script)
		}
	}
	bm := b.Config.Benchmark
	key, cmd, traced := "run", bm.Run, tasks
	if len(bm.Batch) > 0 {
		key, cmd, traced = "batch", bm.Batch, []string{"batch"}
	}
	dst := b.ws().Traces("refused")
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := keepTraces(traceTmp, dst, traced); err != nil {
		return err
	}
	var msg strings.Builder
	status := strings.Join(slices.Sorted(maps.Keys(codes)), " or ")
	meaning := statusMeaning(codes)
	if len(gone) > 0 {
		if len(gone) > 3 {
			gone = append(gone[:3], fmt.Sprintf("… (%d in all)", len(gone)))
		}
		meaning = append(meaning, "the script its shell was given does not exist: "+strings.Join(gone, ", "))
	}
	fmt.Fprintf(&msg, "prepare refused: every task exited with status %s (%s): the benchmark's command is broken, not the code it measures; nothing was written\n", status, strings.Join(meaning, "; "))
	fmt.Fprintf(&msg, "%s: benchmark.%s: %s", b.Config.File, key, quoteArgs(cmd))
	first := filepath.Join(dst, traced[0]+".log")
	lines, err := headLines(first)
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	case len(lines) == 0:
		fmt.Fprintf(&msg, "\n%s printed nothing (trace: %s)", traced[0], b.Display(first))
	default:
		fmt.Fprintf(&msg, "\n%s's output begins (trace: %s):", traced[0], b.Display(first))
		for _, l := range lines {
			msg.WriteString("\n  " + l)
		}
	}
	fmt.Fprintf(&msg, "\nfix benchmark.%s in %s (or the script it runs), commit it, and run hgate prepare again", key, b.Config.File)
	return errors.New(msg.String())
}

// statusMeaning says what the shell means by the exit statuses 126 and 127, where seen.
func statusMeaning(codes map[string]bool) []string {
	var m []string
	if codes["126"] {
		m = append(m, `126: the shell's "not executable"`)
	}
	if codes["127"] {
		m = append(m, `127: the shell's "not found"`)
	}
	return m
}

// missingScript is the script a per-task command hands a shell (sh bench/run.sh {task}),
// as the task's command names it, when no such file is in dir; else "".
func missingScript(run []string, dir, task string) string {
	if len(run) < 2 || !slices.Contains(shells, filepath.Base(run[0])) || strings.HasPrefix(run[1], "-") {
		return ""
	}
	script := strings.ReplaceAll(run[1], "{task}", task)
	if strings.Contains(script, "{") {
		return "" // another placeholder: not a path hgate can check
	}
	path := script
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return script
}

// quoteArgs shows a command as hgate.yaml writes a list: ["sh", "bench/run.sh", "{task}"].
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// headLines reads the first non-empty lines of a trace, each cut to traceLineSize bytes.
func headLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), benchmark.TraceHead)
	for sc.Scan() && len(lines) < traceLines {
		l := strings.TrimRight(strings.ToValidUTF8(sc.Text(), "\uFFFD"), " \t\r")
		if strings.TrimSpace(l) == "" {
			continue
		}
		if len(l) > traceLineSize {
			l = strings.ToValidUTF8(l[:traceLineSize], "") + "…"
		}
		lines = append(lines, human.Printable(l, false)) // the task's output, for the user's terminal
	}
	return lines, nil
}

// baselineRunner runs baseline tasks again through run, the baseline's lanes.
type baselineRunner struct {
	*Env
	run requester
}

// retryTimedOut runs the tasks that timed out at baseline once more, after the others, and
// takes the second result: a first run often pays for cold caches (a compiler building its
// standard library, a first download), and a task left out of the split is left out for
// good. It returns the tasks run again.
func (br baselineRunner) retryTimedOut(ctx context.Context, out *benchmark.Outcome, traceDir string) (map[string]bool, error) {
	run := br.run
	var again []string
	for id, r := range out.Results {
		if timedOut(r) {
			again = append(again, id)
		}
	}
	if len(again) == 0 {
		return nil, nil
	}
	slices.Sort(again)
	fmt.Fprintf(br.log(), "hgate: %d task(s) timed out at baseline; running them once more, after the others: %s\n", len(again), strings.Join(again, ", "))
	second, err := run.Run(ctx, benchmark.Request{
		Split: "all", Tasks: again, TraceDir: traceDir, Progress: br.progress("baseline, timed out", len(again)),
	})
	if err != nil {
		return nil, err
	}
	for _, p := range second.Problems {
		fmt.Fprintf(br.log(), "hgate: warning: %s\n", p)
	}
	retried := make(map[string]bool, len(again))
	for _, id := range again {
		r := second.Results[id]
		if timedOut(r) {
			r.Reason += ", and again when run a second time after the others"
		}
		out.Results[id] = r
		retried[id] = true
	}
	return retried, nil
}

// timedOut reports whether a task was stopped at task_timeout.
func timedOut(r benchmark.Result) bool {
	return r.Reward == nil && strings.HasPrefix(r.Reason, "timed out after ")
}

// timeoutAdvice is the way on for tasks that timed out twice at baseline.
func timeoutAdvice(file string) string {
	return "a task that times out at baseline is left out of the split for good: raise benchmark.task_timeout in " + file +
		", or warm the caches (clean_room.caches, filled by a first run; see Caches in docs/reference/benchmark.md), commit, and run hgate prepare --reset"
}
