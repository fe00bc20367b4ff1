package gate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/internal/human"
	"github.com/hgate/hgate/internal/lazyre"
	"github.com/hgate/hgate/split"
)

// Two refusals of a baseline that says nothing about the code: most tasks null, and every
// task failing the same way without printing a reward. Both hold whether prepare makes the
// split or finds one (a workspace whose split.json survived, or a reset that kept it).

// ZeroBaselineFlag is the flag that accepts a baseline refuseNeverRan refuses.
const ZeroBaselineFlag = "--zero-baseline-ok"

// refuseNulls refuses a baseline where most of the tasks run are null: a benchmark that
// does not run gives nothing to gate by. A new split is judged as it would be made, so the
// refusal also says when one of its sides would be empty.
func (p *prep) refuseNulls(context.Context) error {
	sp, made := p.st.split, p.st.split != nil
	var nulls []string
	if made {
		for _, id := range p.tasks {
			if p.out.Results[id].Reward == nil {
				nulls = append(nulls, id)
			}
		}
		if 2*len(nulls) <= len(p.tasks) {
			return nil
		}
	} else {
		cfg := p.e.Config.Split
		sp, nulls = split.Make(rewards(p.out.Results), cfg.TestFraction, cfg.Seed)
	}
	return baselineCheck{p.e, p.out.Results, p.traceTmp}.checkSplit(sp, nulls, len(p.tasks), made)
}

// exitOnly is the reason of a reward taken from a failing exit status: the task printed
// no reward.
var exitOnly = lazyre.New(`^exit status ([0-9]+)$`)

// refuseNeverRan refuses a baseline where every task failed the same way without printing
// a reward: the same exit status and the same last line of output (the task's id aside),
// as a typo in a path inside `sh -c 'cd exercise/{task} && go test'` gives ("sh: 1: cd:
// can't cd to …"). It runs once the split is made, so that the test tasks' results are
// their own lane's (a room whose test-only paths the train lane cannot read). A zero baseline of that shape measures the benchmark's command, not the
// code; a user for whom it is real says so with ZeroBaselineFlag. Tasks that printed
// nothing are not judged (a silent check that fails is a common real zero).
func (p *prep) refuseNeverRan(context.Context) error {
	b := p.e.Config.Benchmark
	if p.opts.ZeroBaselineOK || len(b.Batch) > 0 || b.Harbor != nil || len(p.tasks) < 2 || p.traceTmp == "" {
		return nil
	}
	status, line, first := "", "", ""
	order := slices.Clone(p.tasks)
	if sp := p.sp; sp != nil {
		// The line quoted is a train task's: the test tasks are held out.
		slices.SortStableFunc(order, func(a, b string) int {
			return cmp.Compare(b2i(slices.Contains(sp.Test, a)), b2i(slices.Contains(sp.Test, b)))
		})
	}
	for _, id := range order {
		r := p.out.Results[id]
		m := exitOnly.Get().FindStringSubmatch(r.Reason)
		if r.Reward == nil || *r.Reward != 0 || m == nil || status != "" && m[1] != status {
			return nil
		}
		if p.testAgain && slices.Contains(p.sp.Test, id) {
			continue // its trace is of the run its result replaced
		}
		last, err := lastLine(filepath.Join(p.traceTmp, id+".log"))
		if err != nil || last == "" {
			return err
		}
		norm := strings.ReplaceAll(last, id, "{task}")
		if line != "" && norm != line {
			return nil
		}
		if line == "" {
			first = last
		}
		status, line = m[1], norm
	}
	// Only the train tasks' traces are kept: the test tasks' are held out (a split made
	// now is made again, from the same runs, by the next prepare).
	kept := p.sp.Train
	dst, err := baselineCheck{p.e, p.out.Results, p.traceTmp}.keepRefused(kept)
	if err != nil {
		return err
	}
	return fmt.Errorf("prepare refused: every task (%d) failed the same way without printing a reward: exit status %s, and every trace ends with the same line:\n  %s\n"+
		"the benchmark's command never reached the code it measures (a path or a command in benchmark.run?); nothing was written (traces: %s)\n"+
		"fix benchmark.run in %s (or the script it runs), commit it, and run hgate prepare again; if a baseline where every task fails is real, run hgate prepare %s",
		len(p.tasks), status, first, p.e.Display(dst), p.e.Config.File, ZeroBaselineFlag)
}

// keepRefused keeps the traces of tasks in traces/refused, replacing what was there.
func (b baselineCheck) keepRefused(tasks []string) (string, error) {
	traceTmp := b.traceTmp
	dst := b.ws().Traces("refused")
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	return dst, keepTraces(traceTmp, dst, tasks)
}

// lastLine is the last non-empty line of a trace, read from its last 8 KiB, cut to
// traceLineSize bytes; "" for a trace that is empty or does not exist.
func lastLine(path string) (string, error) {
	f, err := fsafe.Open(path, traceReadMax) // a trace: {trace_dir} is the tasks'
	if errors.Is(err, os.ErrNotExist) || fsafe.Refused(err) {
		return "", nil // none, or not hgate's: a task replaced it (a link, a FIFO, ...)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	const tail = 8 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return "", err
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.ToValidUTF8(string(data), "\uFFFD"), "\n")
	for j := len(lines) - 1; j >= 0; j-- {
		if l := strings.TrimRight(lines[j], " \t\r"); strings.TrimSpace(l) != "" {
			if len(l) > traceLineSize {
				l = strings.ToValidUTF8(l[:traceLineSize], "") + "…"
			}
			return human.Printable(l, false), nil // the task's output, for the user's terminal
		}
	}
	return "", nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
