package gate

import (
	"bufio"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hgate/hgate/benchmark"
)

// brokenStatus matches a reason that ends in the exit status a shell gives a command it
// could not run: 126, found but not executable; 127, not found.
var brokenStatus = regexp.MustCompile(`(?:^|; )exit status (12[67])$`)

// traceLines is how much of a broken command's output a refusal repeats.
const (
	traceLines    = 5
	traceLineSize = 200
)

// checkRuns refuses a baseline where every task failed with exit status 126 or 127: the
// benchmark's own command is broken (a typo in a script's path), and a baseline of zeros
// would gate every change against nothing. It names the command and repeats the first
// lines of one task's output; every task's trace is kept in traces/refused.
func (e *Env) checkRuns(tasks []string, results map[string]benchmark.Result, traceTmp string) error {
	if len(tasks) == 0 {
		return nil
	}
	codes := map[string]bool{}
	for _, id := range tasks {
		m := brokenStatus.FindStringSubmatch(results[id].Reason)
		if m == nil {
			return nil
		}
		codes[m[1]] = true
	}
	b := e.Config.Benchmark
	key, cmd, traced := "run", b.Run, tasks
	if len(b.Batch) > 0 {
		key, cmd, traced = "batch", b.Batch, []string{"batch"}
	}
	dst := e.ws().Traces("refused")
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
	fmt.Fprintf(&msg, "prepare refused: every task exited with status %s (%s): the benchmark's command is broken, not the code it measures; nothing was written\n", status, statusMeaning(codes))
	fmt.Fprintf(&msg, "%s: benchmark.%s: %s", e.Config.File, key, quoteArgs(cmd))
	first := filepath.Join(dst, traced[0]+".log")
	lines, err := headLines(first)
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	case len(lines) == 0:
		fmt.Fprintf(&msg, "\n%s printed nothing (trace: %s)", traced[0], e.display(first))
	default:
		fmt.Fprintf(&msg, "\n%s's output begins (trace: %s):", traced[0], e.display(first))
		for _, l := range lines {
			msg.WriteString("\n  " + l)
		}
	}
	fmt.Fprintf(&msg, "\nfix benchmark.%s in %s (or the script it runs), commit it, and run hgate prepare again", key, e.Config.File)
	return errors.New(msg.String())
}

// statusMeaning says what the shell means by the exit statuses seen.
func statusMeaning(codes map[string]bool) string {
	var m []string
	if codes["126"] {
		m = append(m, `126: the shell's "not executable"`)
	}
	if codes["127"] {
		m = append(m, `127: the shell's "not found"`)
	}
	return strings.Join(m, "; ")
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
		lines = append(lines, l)
	}
	return lines, nil
}
