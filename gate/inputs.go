package gate

import (
	"context"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/split"
)

// inputs is what the gate reads before any task runs: the candidate tree and Step 0's
// answer, the split, the state files, the best to beat, and the tree's earlier receipt.
// The phases after it fill in its report.
type inputs struct {
	rep  *Report
	tree plumbing.Hash
	sp   *split.Split
	st   *state

	best    float64
	hasBest bool
	// noisy: with gate.trials or a margin, Step 2 compares task by task with the best's
	// own trials (bestTrials).
	noisy      bool
	bestTrials Trials

	prior  *Receipt // the tree's earlier receipt; nil when never gated
	cached bool     // Step 2 is prior's score, not run again
	pooled bool     // --rerun with trials: the new trials pool with prior's
	c      changes  // state files the gate writes besides the suite and its receipt
}

// readInputs reads the gate's inputs. With a Step 0 violation it returns at once, Step 0
// in its report, without reading more.
func (e *Env) readInputs(ctx context.Context, opts Options) (*inputs, error) {
	if err := e.verify(); err != nil {
		return nil, err
	}
	headCommit, _, err := e.Repo.Head()
	if err != nil {
		return nil, err
	}
	// The candidate tree and Step 0's violations come from one look at the worktree.
	tree, v, err := e.Repo.Inspect(e.guardOptions())
	if err != nil {
		return nil, err
	}
	in := &inputs{tree: tree, c: changes{},
		rep: &Report{Verdict: "reject", Tree: tree.String(), Head: headCommit.String(), Reasons: []string{}}}
	if !in.step0(e.Config.FileGuard, v) {
		return in, nil
	}
	if err := e.readState(in); err != nil {
		return nil, err
	}
	if err := e.bestToBeat(ctx, in); err != nil {
		return nil, err
	}
	// No second look at the test split: a tree scored before keeps its score, so an agent
	// cannot fish for a lucky run by gating the same candidate again.
	prior, err := loadReceipt(e.ws(), in.rep.Tree)
	if err != nil {
		return nil, err
	}
	in.reuse(prior, opts, e.CleanRoom)
	return in, nil
}

// step0 is the file guard's answer on the violations v; false rejects the change before
// any task runs.
func (in *inputs) step0(guard bool, v []gitguard.Violation) bool {
	s0 := &Step0{OK: true, Skipped: !guard, Violations: []gitguard.Violation{}}
	in.rep.Steps.Step0 = s0
	if guard && len(v) > 0 {
		s0.OK, s0.Violations = false, v
		in.rep.Reasons = append(in.rep.Reasons, step0Reason(v))
		return false
	}
	return true
}

// readState reads the split and the state files, and the best on record in results.tsv.
func (e *Env) readState(in *inputs) error {
	ws := e.ws()
	sp, err := e.loadSplit()
	if err != nil {
		return err
	}
	// No gate over nothing: a mean over zero test tasks would pass every change.
	if err := emptySide(ws, sp); err != nil {
		return err
	}
	st, err := loadState(ws)
	if err != nil {
		return err
	}
	if st.suite == nil || st.train == nil || !st.hasRows {
		return fmt.Errorf("the workspace %s is incomplete (suite.json, train_results.json and results.tsv are needed): run hgate prepare", ws)
	}
	in.sp, in.st = sp, st
	in.best, in.hasBest = record.Best(st.rows)
	return nil
}

// bestToBeat decides how Step 2 compares: with trials or a margin, task by task with the
// best's own trials (scored first when the best has none yet), else with the best's
// val_score.
func (e *Env) bestToBeat(ctx context.Context, in *inputs) error {
	in.noisy = e.Config.Gate.Noisy()
	if in.noisy {
		br, err := e.bestRecord()
		if err != nil {
			return err
		}
		if br != nil && br.trials == nil && !br.tree.IsZero() {
			if err := e.scoreBest(ctx, br, in.sp.Test, in.c); err != nil {
				return err
			}
		}
		if br != nil {
			in.bestTrials = br.trials
		}
		if in.bestTrials == nil {
			fmt.Fprintf(e.log(), "hgate: warning: gate: trials/margin are set but the best has no per-task record and its tree is unknown (a workspace prepared by an older hgate); Step 2 compares val_score with the best as without them\n")
			in.noisy = false
		} else {
			in.best, _ = in.bestTrials.score(in.sp.Test, e.Config.Benchmark.TimeoutPolicy)
			in.hasBest = true
		}
	}
	if in.hasBest {
		in.rep.Best = &in.best
	}
	return nil
}

// reuse decides whether Step 2 is prior's score (cached) and whether new trials pool with
// prior's (pooled). A score is reused only for the same test split, never with --rerun,
// never from outside the clean room inside it, only from a receipt opts.Trust holds when
// set, and with trials only from a receipt that kept them.
func (in *inputs) reuse(prior *Receipt, opts Options, cleanRoom bool) {
	in.prior = prior
	same := prior != nil && prior.TestTasks == len(in.sp.Test)
	in.cached = same && !opts.Rerun && (prior.CleanRoom || !cleanRoom) &&
		(opts.Trust == nil || opts.Trust.Wrote(in.rep.Tree)) && (!in.noisy || prior.TestResults != nil)
	// With trials, a tree's trials pool: --rerun adds to its earlier ones instead of
	// replacing them, so running a tree again refines its estimate and cannot fish for luck.
	in.pooled = in.noisy && !in.cached && opts.Rerun && same && prior.TestResults != nil
}

// firstTrial numbers the first trial Step 2 runs: after prior's when they pool.
func (in *inputs) firstTrial() int {
	if in.pooled {
		return 1 + len(in.prior.TestResults[in.sp.Test[0]])
	}
	return 1
}
