package check

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// DefaultTasks is how many train tasks the benchmark level runs on each tree.
const DefaultTasks = 4

// Benchmark runs n train tasks on HEAD's tree, then on a variant that differs only where
// allow matches: benchmark.reference's allowed files when it is set (they must score
// higher: a fail when they do not), else every allowed file emptied (a warning naming what
// it tried when no reward moved: a benchmark that never reads the candidate measures
// noise). Both run in clean rooms of their own; no worktree and no state file is written.
func Benchmark(ctx context.Context, e *gate.Env, n int) Result {
	res := Result{Level: LevelBenchmark, Status: OK}
	_, head, err := e.Repo.Head()
	if err != nil {
		return cannot(res, "read HEAD: %v", err)
	}
	if !e.CleanRoom {
		return cannot(res, "%v", gate.ErrNoRoom)
	}
	all, err := gate.TrainTasks(ctx, e, head)
	if err != nil {
		return cannot(res, "list the train tasks: %v", err)
	}
	ids := pick(all, workspace.Dir(e.Config.WorkspaceDir()).TrainResults(), n)
	if len(ids) == 0 {
		return cannot(res, "the benchmark lists no train task")
	}
	base, err := gate.ScoreTree(ctx, e, head, ids)
	if err != nil {
		return cannot(res, "run %s on HEAD: %v", strings.Join(ids, ", "), err)
	}
	res.add("HEAD %s: %s", head.String()[:7], rewards(ids, base))
	if ran(&res, ids, base) {
		variant(ctx, e, &res, head, ids, base)
	}
	return res
}

// ran reports whether any task scored; it notes the nulls.
func ran(res *Result, ids []string, rs map[string]benchmark.Result) bool {
	scored := 0
	for _, id := range ids {
		r, ok := rs[id]
		switch {
		case ok && r.Reward != nil:
			scored++
		case ok:
			res.worsen(Warn)
			res.add("warning: %s scored null: %s", id, r.Reason)
		default:
			res.worsen(Warn)
			res.add("warning: %s gave no result", id)
		}
	}
	if scored == 0 {
		res.worsen(Fail)
		res.add("no task scored: the benchmark does not run (see the reasons above; hgate bench --tasks %s shows the traces)", ids[0])
	}
	return scored > 0
}

// variant scores the tree that differs from head where allow matches and judges it; an
// allowed file the benchmark's commands name is a warning either way.
func variant(ctx context.Context, e *gate.Env, res *Result, head plumbing.Hash, ids []string, base map[string]benchmark.Result) {
	allow := e.Config.Allow
	tree, paths, err := e.Repo.EmptiedTree(head, allow)
	if err != nil {
		res.worsen(Cannot)
		res.add("empty the allowed files: %v", err)
		return
	}
	if named := AllowedScorers(e.Config.Benchmark, paths); len(named) > 0 {
		res.worsen(Warn)
		res.add("warning: %s", ScorerWarning(allow, named))
	}
	if ref := e.Config.Benchmark.Reference; ref != "" {
		reference(ctx, e, res, head, ref, ids, base)
		return
	}
	if len(paths) == 0 {
		res.worsen(Warn)
		res.add("warning: allow (%s) matches no non-empty file at HEAD: nothing to empty, so hgate could not see whether the benchmark reads the allowed files; set benchmark.reference", strings.Join(allow, ", "))
		return
	}
	emptied, err := gate.ScoreTree(ctx, e, tree, ids)
	if err != nil {
		res.worsen(Cannot)
		res.add("run %s with the allowed files emptied: %v", strings.Join(ids, ", "), err)
		return
	}
	tried := "emptied " + list(paths)
	if moved := changed(ids, base, emptied); len(moved) > 0 {
		res.add("%s: %s", tried, strings.Join(moved, ", "))
		if sum(ids, emptied) > sum(ids, base) {
			res.worsen(Warn)
			res.add("warning: with the allowed files emptied the tasks scored higher (sum %.4g against HEAD's %.4g): without the candidate a benchmark should score lower; it may take its verdict from a file allow matches (a checker, a test, the expected answers), which the agent may edit", sum(ids, emptied), sum(ids, base))
		}
		return
	}
	res.worsen(Warn)
	res.add("warning: %s, and no reward of %s moved (%s): the benchmark may never read the allowed files (a candidate that never reaches the task), so every gate would measure noise; check how a task gets the candidate, or set benchmark.reference to a commit that must score higher",
		tried, strings.Join(ids, ", "), rewards(ids, emptied))
}

// reference scores benchmark.reference's allowed files over HEAD: they must score higher.
func reference(ctx context.Context, e *gate.Env, res *Result, head plumbing.Hash, ref string, ids []string, base map[string]benchmark.Result) {
	commit, err := e.Repo.CommitByPrefix(ref)
	var tree plumbing.Hash
	if err == nil {
		tree, err = e.Repo.TreeOf(commit)
	}
	if err != nil {
		res.worsen(Fail)
		res.add("benchmark.reference %s: %v", ref, err)
		return
	}
	over, paths, err := e.Repo.OverlayAllowed(head, tree, e.Config.Allow)
	if err != nil {
		res.worsen(Cannot)
		res.add("benchmark.reference %s: %v", ref, err)
		return
	}
	if len(paths) == 0 {
		res.worsen(Fail)
		res.add("benchmark.reference %s: its allowed files are HEAD's: there is nothing to score higher", ref)
		return
	}
	got, err := gate.ScoreTree(ctx, e, over, ids)
	if err != nil {
		res.worsen(Cannot)
		res.add("run %s with benchmark.reference's allowed files: %v", strings.Join(ids, ", "), err)
		return
	}
	b, r := sum(ids, base), sum(ids, got)
	line := fmt.Sprintf("benchmark.reference %s (%s): %s, sum %.4g against HEAD's %.4g", commit.String()[:7], list(paths), rewards(ids, got), r, b)
	if r > b {
		res.add("%s", line)
		return
	}
	res.worsen(Fail)
	res.add("%s: it does not score higher, so the benchmark may never read the allowed files, or the reference does not help on these tasks", line)
}

// pick chooses up to n tasks of all: those that passed in the last train run
// (train_results.json: prepare's baseline, or hgate bench's last full run) first, since
// emptying what they run on should break them, then the others, each in sorted order.
func pick(all []string, trainResults string, n int) []string {
	var first, rest []string
	tr, err := suite.LoadTrainResults(trainResults)
	for _, id := range all {
		if err == nil && suite.Passed(tr.Results[id]) {
			first = append(first, id)
		} else {
			rest = append(rest, id)
		}
	}
	out := append(first, rest...)
	return out[:min(n, len(out))]
}

// changed lists the tasks whose reward differs between a and b, as "id a→b".
func changed(ids []string, a, b map[string]benchmark.Result) []string {
	var out []string
	for _, id := range ids {
		x, y := reward(a[id]), reward(b[id])
		if x != y {
			out = append(out, fmt.Sprintf("%s %s→%s", id, x, y))
		}
	}
	return out
}

func rewards(ids []string, rs map[string]benchmark.Result) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + " " + reward(rs[id])
	}
	return strings.Join(parts, ", ")
}

func reward(r benchmark.Result) string {
	if r.Reward == nil {
		return "null"
	}
	return fmt.Sprintf("%.4g", *r.Reward)
}

func sum(ids []string, rs map[string]benchmark.Result) float64 {
	t := 0.0
	for _, id := range ids {
		if r := rs[id].Reward; r != nil {
			t += *r
		}
	}
	return t
}

// list names paths, at most 5 of them.
func list(paths []string) string {
	if len(paths) <= 5 {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:5], ", "), len(paths)-5)
}

func cannot(res Result, format string, args ...any) Result {
	res.worsen(Cannot)
	res.add(format, args...)
	return res
}
