package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/internal/timeline"
	"github.com/hgate/hgate/split"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// BenchReport is the outcome of an ad hoc run of train tasks.
type BenchReport struct {
	Full    bool // every train task ran, so train_results.json was rewritten
	Tasks   []string
	Results map[string]benchmark.Result
	Passed  int
	Spend   benchmark.Spend // what the benchmark's agents spent (Harbor)
}

// loadSplit reads split.json, pointing at prepare when it is missing.
func (s store) loadSplit() (*split.Split, error) {
	sp, err := openSplit(heldOut(s.Env), s.ws().Split())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s does not exist: run hgate prepare first", s.ws().Split())
	}
	return sp, err
}

// Bench runs train tasks: the given ids, or every train task when ids is empty. The test
// split cannot be run this way: its tasks are refused by name. A full run rewrites
// traces/latest and train_results.json; a partial run updates the traces of its tasks only.
// In an Env's Worktree it writes its traces there, and no state file.
func Bench(ctx context.Context, e *Env, ids []string) (*BenchReport, error) {
	timeline.Mark("bench: start")
	e.rooms().Probe() // the sandbox's probes run while the state is checked
	if err := (store{e}).verify(); err != nil {
		return nil, err
	}
	if err := (measuredCheck{e}).checkHead(); err != nil {
		return nil, err
	}
	if err := (measuredCheck{e}).noteUnrecorded(); err != nil {
		return nil, err
	}
	timeline.Mark("bench: state checked")
	sp, err := store{e}.loadSplit()
	if err != nil {
		return nil, err
	}
	rep, err := benchTasks(sp, ids, e.ws().Split())
	if err != nil {
		return nil, err
	}
	latest, traceDir, err := benchTraceDir(e.traces(), rep.Full)
	if err != nil {
		return nil, err
	}
	if traceDir != latest {
		defer os.RemoveAll(traceDir)
	}
	out, err := benchInRoom(ctx, e, rep, traceDir)
	if err != nil {
		return nil, err
	}
	rep.Results = out.Results
	rep.Passed, _ = passedCount(rep.Tasks, out.Results)
	rep.Spend = out.Spend
	if !rep.Full {
		return rep, nil
	}
	return rep, saveFullBench(e, rep, latest, traceDir)
}

// benchTasks is the report of a bench of ids (every train task of sp when ids is empty),
// its tasks sorted: ids outside the train split (splitFile lists it) are refused, each
// with its reason, and the test split's by name.
func benchTasks(sp *split.Split, ids []string, splitFile string) (*BenchReport, error) {
	var bad []string
	for _, id := range ids {
		switch {
		case slices.Contains(sp.Test, id) || slices.Contains(sp.Final, id):
			// The same words for a final id: split.json lists both as test ids.
			bad = append(bad, fmt.Sprintf("task %q is in the held-out test split: it runs only inside hgate gate", id))
		case !slices.Contains(sp.Train, id):
			bad = append(bad, fmt.Sprintf("task %q is not a train task (train tasks are listed in %s)", id, splitFile))
		}
	}
	if len(bad) > 0 {
		return nil, errors.New(strings.Join(bad, "\n"))
	}
	rep := &BenchReport{Full: len(ids) == 0, Tasks: slices.Clone(ids)}
	if rep.Full {
		rep.Tasks = slices.Clone(sp.Train)
	}
	rep.Tasks = slices.Compact(slices.Sorted(slices.Values(rep.Tasks)))
	return rep, nil
}

// benchTraceDir makes the folder a bench writes its traces to: latest itself for some
// tasks; for all, latest.new, which replaces latest whole only once the run has finished.
func benchTraceDir(latest string, full bool) (string, string, error) {
	traceDir := latest
	if full {
		traceDir = latest + ".new"
		if err := os.RemoveAll(traceDir); err != nil {
			return "", "", err
		}
	}
	if err := os.MkdirAll(traceDir, 0o755); err != nil {
		return "", "", err
	}
	return latest, traceDir, nil
}

// benchInRoom runs rep's tasks on the candidate's tree in a clean room of train tasks.
func benchInRoom(ctx context.Context, e *Env, rep *BenchReport, traceDir string) (*benchmark.Outcome, error) {
	repo, gopts := e.candidate()
	tree, err := repo.CandidateTree(gopts)
	if err != nil {
		return nil, err
	}
	timeline.Mark("bench: tree read")
	rm, err := carry{e}.openVerifiedRoom(tree)
	if err != nil {
		return nil, err
	}
	defer func() { rm.Close(); timeline.Mark("bench: room removed") }()
	timeline.Mark("bench: room written")
	run, err := rm.Runner(nil, cleanroom.Train)
	if err != nil {
		return nil, err
	}
	timeline.Mark("bench: runner ready (the sandbox's probes done)")
	out, err := run.Run(ctx, benchmark.Request{
		Split: "train", Tasks: rep.Tasks, TraceDir: traceDir, Progress: e.progress("bench", len(rep.Tasks)),
	})
	if err != nil {
		return nil, err
	}
	for _, p := range out.Problems {
		fmt.Fprintf(e.log(), "hgate: warning: %s\n", p)
	}
	timeline.Mark("bench: tasks done")
	return out, nil
}

// saveFullBench makes a full run's traces traces/latest and, for the gated tree (not an
// agent's worktree), saves its scores as train_results.json.
func saveFullBench(e *Env, rep *BenchReport, latest, traceDir string) error {
	if err := os.RemoveAll(latest); err != nil {
		return err
	}
	if err := os.Rename(traceDir, latest); err != nil {
		return err
	}
	timeline.Mark("bench: traces/latest replaced")
	if e.Worktree != nil {
		return nil // the scores of a tree that is not the gated one: not hgate's record
	}
	tr := suite.NewTrainResults(rewards(rep.Results), e.Clock())
	c := changes{}
	if err := c.add(workspace.TrainResults, tr.Marshal); err != nil {
		return err
	}
	err := store{e}.apply(fmt.Sprintf("bench: %d/%d train tasks passed", rep.Passed, len(rep.Tasks)), c)
	timeline.Mark("bench: saved")
	return err
}
