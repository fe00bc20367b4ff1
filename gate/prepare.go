package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/split"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// PrepareReport says what prepare found and wrote.
type PrepareReport struct {
	// Created lists the workspace files written by this run, in the order written;
	// empty when the workspace was already complete.
	Created  []string
	Tasks    int // tasks run for the baseline
	Passed   int
	Train    []string
	Test     []string
	Excluded []string        // tasks left out of the split because their baseline reward was null
	ValScore float64         // results.tsv row 0
	Spend    benchmark.Spend // what the benchmark's agents spent on the baseline (Harbor)
	// Trials is what gate.trials: auto decided, when this run decided it.
	Trials *TrialsSetting
	// Final is how many tasks the sealed final split of a new split holds; FinalNote says
	// why a new split has none although split.final asked for one.
	Final     int
	FinalNote string
}

// state is the workspace as found on disk; a nil field means the file does not exist.
type state struct {
	split   *split.Split
	suite   *suite.Suite
	train   *suite.TrainResults
	rows    []record.Row
	hasRows bool
}

// loadState reads every state file that exists. A malformed file is an error, never an
// empty value: state is never silently reset.
func loadState(ws workspace.Dir, v vault) (*state, error) {
	st := &state{}
	var errs []error
	note := func(err error) bool {
		if err == nil {
			return true
		}
		if !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
		return false
	}
	if s, err := openSplit(v, ws.Split()); note(err) {
		st.split = s
	}
	if s, err := suite.Load(ws.Suite()); note(err) {
		st.suite = s
	}
	if t, err := suite.LoadTrainResults(ws.TrainResults()); note(err) {
		st.train = t
	}
	if rows, err := record.Load(ws.Results()); note(err) {
		st.rows, st.hasRows = rows, true
	}
	return st, errors.Join(errs...)
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Prepare creates the workspace: it runs the baseline on every task, writes split.json,
// traces/baseline (train tasks only), train_results.json, suite.json, results.tsv row 0 and
// learnings.md. Existing files are never overwritten; a complete workspace is left alone.
// Nothing is written when ctx is cancelled before the baseline finishes.
func Prepare(ctx context.Context, e *Env, opts ...PrepareOptions) (*PrepareReport, error) {
	e.rooms().Probe() // the sandbox's probes run while the state is checked
	m := &e.rooms().Meter
	before := m.Total()
	var o PrepareOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	rep, err := prepare(ctx, e, o)
	if rep != nil {
		rep.Spend = m.Total().Sub(before)
	}
	return rep, err
}

// ResetReport says what a reset ended before prepare started over.
type ResetReport struct {
	*ledger.ResetReport
	Head   plumbing.Hash // the commit gated from now on
	Traces []string      // trace folders removed, as messages name them
}

// PrepareReset starts over on purpose: it ends the ledger's state with one manual entry
// (the old history stays its parent), removes the workspace's state files and the traces
// of the old split, gates HEAD, clears refs/hgate/best, and then prepares as new. The old
// state is not verified first: ending a tampered or half-removed state is what a reset is
// for. learnings.md and runs/ are kept. A prepare that fails after the reset leaves a
// workspace as new, which the next hgate prepare prepares.
func PrepareReset(ctx context.Context, e *Env, opts ...PrepareOptions) (*ResetReport, *PrepareReport, error) {
	e.rooms().Probe() // the sandbox's probes run while the state is reset
	head, err := preparedHead(e)
	if err != nil {
		return nil, nil, err
	}
	l := e.ledger()
	msg := "manual reset: start over at HEAD " + head.String()[:7]
	if tip, err := l.Tip(); err != nil {
		return nil, nil, err
	} else if !tip.IsZero() {
		msg += "; the previous state ends at " + tip.String()[:7] + ", this entry's parent"
	}
	lr, err := l.Reset(head, msg+"; "+gitguard.BestRef+" cleared")
	if err != nil {
		return nil, nil, err
	}
	rs := &ResetReport{ResetReport: lr, Head: head}
	// The traces hgate kept are of the old split's train tasks: some may be test tasks
	// of the new one, which the agent must not read.
	ws := e.ws()
	for _, dir := range []string{ws.Traces("baseline"), ws.Traces("baseline") + ".tmp", ws.Traces("latest"), ws.Traces("refused")} {
		if !exists(dir) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return rs, nil, err
		}
		if !strings.HasSuffix(dir, ".tmp") {
			rs.Traces = append(rs.Traces, e.Display(dir))
		}
	}
	// The final split's scores are of the old split's final tasks: kept, set aside.
	if err := setAsideFinal(e.Repo, lr.Entry.String()[:7]); err != nil {
		return rs, nil, err
	}
	fault.Point("reset-applied")
	rep, err := Prepare(ctx, e, opts...)
	if err != nil {
		return rs, nil, fmt.Errorf("%w\nthe reset is done (ledger entry %s); run hgate prepare to finish preparing", err, lr.Entry.String()[:7])
	}
	return rs, rep, nil
}

// preparedHead is the commit prepare starts from, HEAD; it refuses a repository with no
// commit and a workspace folder a commit could carry.
func preparedHead(e *Env) (plumbing.Hash, error) {
	rel := filepath.ToSlash(e.Config.Workspace)
	head, _, err := e.Repo.Head()
	if err != nil {
		// No commit yet: no .gitignore can be committed, whatever it says.
		return head, fmt.Errorf("the repository has no commit yet: commit the project first (with %s and a .gitignore that ignores /%s/), then run hgate prepare", e.Config.File, rel)
	}
	if !e.Repo.IsIgnored(e.guardOptions(), rel, true) {
		return head, fmt.Errorf("the workspace folder %s/ is not ignored by a committed .gitignore (hgate's state must stay out of the agent's commits): add the line /%s/ to .gitignore and commit it, or list it under ignore: in %s", rel, rel, e.Config.File)
	}
	return head, nil
}

// anchors moves refs/hgate/gated for prepare and the loop, through the ledger.
type anchors struct{ *Env }

// markGated makes the prepared commit the guard's base when no commit was gated yet, so
// commits made after prepare are checked by Step 0. The move is recorded in the ledger.
func (a anchors) markGated(head plumbing.Hash) error {
	refs, err := a.gatedMove(head)
	if err != nil || refs == nil {
		return err
	}
	return store(a).commit(ledger.Update{Message: "prepare: " + head.String()[:7] + " is the first gated commit", Refs: refs})
}

// MarkGated is markGated for the loop, which starts from HEAD when nothing was gated yet.
func (e *Env) MarkGated() error {
	head, _, err := e.Repo.Head()
	if err != nil {
		return err
	}
	return anchors{e}.markGated(head)
}

// gatedMove is the anchor move that makes head the first gated commit; nil when a commit
// was gated already.
func (a anchors) gatedMove(head plumbing.Hash) (map[string]plumbing.Hash, error) {
	cur, err := a.Repo.Ref(gitguard.GatedRef)
	if err != nil || !cur.IsZero() {
		return nil, err
	}
	return map[string]plumbing.Hash{gitguard.GatedRef: head}, nil
}

// keepTraces copies the traces of the given tasks from src into a new folder dst, made
// whole under a temporary name and renamed into place.
func keepTraces(src, dst string, tasks []string) error {
	tmp := dst + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	// src is {trace_dir}, which the tasks could write: read by descriptor (fsafe). A run
	// that kept no traces (none, or no folder) leaves an empty folder.
	from, err := fsafe.OpenRoot(src)
	if src == "" || errors.Is(err, fs.ErrNotExist) {
		return os.Rename(tmp, dst)
	}
	if err != nil {
		return err
	}
	defer from.Close()
	for _, id := range slices.Sorted(slices.Values(tasks)) {
		data, err := from.ReadFile(id+".log", benchmark.TraceMax)
		if fsafe.Refused(err) {
			// A task replaced this trace after hgate wrote it (a link, a folder, a FIFO, a
			// hard link, a sparse file): not read, and said so where the trace would be.
			data, err = fmt.Appendf(nil, "hgate: %s.log in {trace_dir} was not hgate's trace when it was kept (%v): not read\n", id, err), nil
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(tmp, id+".log"), data, 0o644)
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.Rename(tmp, dst)
}

// checkSplit refuses a split the gate could not judge by: one side empty, or most tasks
// null at baseline (a benchmark that does not run). Nothing is written then, but the null
// tasks' traces are kept in traces/refused so their reasons can be read; with a split
// already made, only the train tasks' (sp.Test is held out).
func (b baselineCheck) checkSplit(sp *split.Split, excluded []string, total int, made bool) error {
	results, traceTmp := b.results, b.traceTmp
	var why []string
	if 2*len(excluded) > total {
		why = append(why, fmt.Sprintf("%d of %d tasks had a null baseline reward (the benchmark does not run?)", len(excluded), total))
	}
	if len(sp.Train) == 0 || len(sp.Test) == 0 {
		why = append(why, fmt.Sprintf("the split would be %d train / %d test tasks (the gate needs both sides)", len(sp.Train), len(sp.Test)))
	}
	if len(why) == 0 {
		return nil
	}
	msg := "prepare refused: " + strings.Join(why, "; ") + "; nothing was written"
	if len(excluded) > 0 {
		dst := b.ws().Traces("refused")
		if err := os.RemoveAll(dst); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		kept := excluded
		if made {
			kept = slices.DeleteFunc(slices.Clone(excluded), func(id string) bool { return slices.Contains(sp.Test, id) })
		}
		if err := keepTraces(traceTmp, dst, kept); err != nil {
			return err
		}
		msg += "\nnull baseline rewards:\n" + strings.Join(nullLines(b.Display, excluded, results, dst, dst), "\n")
	}
	return errors.New(msg + "\nfix the benchmark (each task's command must print a reward or exit 0/1) and run hgate prepare again")
}

// nullLines is one line per null task: its reason and, when the task left output, where
// its trace is (kept under dir; looked for under src), as display names paths.
func nullLines(display func(string) string, ids []string, results map[string]benchmark.Result, dir, src string) []string {
	var lines []string
	for _, id := range ids {
		reason := results[id].Reason
		if reason == "" {
			reason = "no reward"
		}
		l := fmt.Sprintf("  %s: %s", id, reason)
		if exists(filepath.Join(src, id+".log")) {
			l += fmt.Sprintf(" (trace: %s)", display(filepath.Join(dir, id+".log")))
		}
		lines = append(lines, l)
	}
	return lines
}

// emptySide refuses a split.json with an empty side, which only an older hgate or a hand
// edit makes: the gate cannot answer over it.
func emptySide(ws workspace.Dir, sp *split.Split) error {
	if len(sp.Train) > 0 && len(sp.Test) > 0 {
		return nil
	}
	return fmt.Errorf("%s has %d train / %d test tasks: the gate cannot judge a change over an empty side; fix the benchmark and start over with hgate prepare --reset (the old state stays in hgate state log)", ws.Split(), len(sp.Train), len(sp.Test))
}

// baselineTrials runs the test tasks up to trials.max times in all and returns each
// task's trials: the first from results, then auto's further runs (more) when there are.
func (tr trialRunner) baselineTrials(ctx context.Context, tasks []string, results map[string]benchmark.Result, more Trials) (Trials, error) {
	t := pooledRuns(tasks, results, more)
	if len(tasks) == 0 {
		return t, nil
	}
	next := 1 + len(t[tasks[0]])
	if err := tr.run(ctx, tasks, next, tr.Config.Gate.TrialsMax, "baseline trial %d", nil, t); err != nil {
		return nil, err
	}
	return t, nil
}

// pooledRuns is each task's first result followed by auto's further runs.
func pooledRuns(tasks []string, results map[string]benchmark.Result, more Trials) Trials {
	t := Trials{}
	t.add(tasks, results)
	for _, id := range tasks {
		t[id] = append(t[id], more[id]...)
	}
	return t
}

// testAgain runs the test tasks of a baseline that ran every task in a train lane once
// more in a test lane (retrying the ones that time out, as the first run did): their
// baseline rewards are the test lane's.
func (br baselineRunner) testAgain(ctx context.Context, test []string, out *benchmark.Outcome) error {
	run := br.run
	again, err := run.Run(ctx, benchmark.Request{
		Split: "test", Tasks: test, Progress: br.progressCount("baseline, test tasks in their own lane", len(test)),
	})
	if err != nil {
		return err
	}
	for _, p := range again.Problems {
		fmt.Fprintf(br.log(), "hgate: warning: %s\n", p)
	}
	// The held-out split keeps no traces ("" writes none).
	if _, err := br.retryTimedOut(ctx, again, ""); err != nil {
		return err
	}
	maps.Copy(out.Results, again.Results)
	return nil
}
