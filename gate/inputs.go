package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/split"
)

// inputs is what the gate reads before any task runs: the candidate tree and Step 0's
// answer, the split, the state files, the best to beat, and the tree's earlier receipt.
// The phases after it fill in its report.
type inputs struct {
	rep  *Answer
	tree plumbing.Hash
	sp   *split.Split
	st   *state

	best    float64
	hasBest bool
	// noisy: with gate.trials or a margin, Step 2 compares task by task with the best's
	// own trials (bestTrials).
	noisy      bool
	bestTrials Trials

	// gated is the gated commit, the one the candidate replaces, as a second reference
	// (compared.go); nil when it is the best's tree or has no score to compare with.
	gated *reference

	prior  *Receipt // the tree's earlier receipt; nil when never gated
	cached bool     // Step 2 is prior's score, not run again
	pooled bool     // --rerun (or stale): the new samples pool with prior's
	stale  bool     // prior rejected the tree against a best that has moved since
	// conditions names what the test split runs under (runConditions); samples pool only
	// with samples taken under the same.
	conditions string
	guarded    []string // train tasks that passed at the gated commit, outside the suite (keeppassing.go)
	broken     []string // of them, those that failed every run
	pending    bool     // Step 2 is deferred to the loop (Options.Pending)
	c          changes  // state files the gate writes besides the suite and its receipt
}

// readInputs reads the gate's inputs. With a Step 0 violation it returns at once, Step 0
// in its report, without reading more.
func readInputs(ctx context.Context, e *Env, opts Options) (*inputs, error) {
	if err := (store{e}).verify(); err != nil {
		return nil, err
	}
	repo, gopts := e.candidate()
	headCommit, _, err := repo.Head()
	if err != nil {
		return nil, err
	}
	// The candidate tree and Step 0's violations come from one look at the worktree.
	tree, v, err := repo.Inspect(gopts)
	if err != nil {
		return nil, err
	}
	in := &inputs{tree: tree, c: changes{}, pending: opts.Pending,
		rep: &Answer{Verdict: "reject", Tree: tree.String(), Head: headCommit.String(), Reasons: []string{}}}
	if !in.step0(e.Config.FileGuard, v) {
		return in, nil
	}
	if err := readState(e, in); err != nil {
		return nil, err
	}
	if err := readGuarded(e, in); err != nil {
		return nil, err
	}
	if in.pending {
		// Nothing of the test split is run or read: not the best's, not the tree's own;
		// "prev best" is the one best hgate status shows too (CurrentBest, an aggregate).
		b, err := CurrentBest(e.Config, e.Repo)
		if err != nil {
			return nil, err
		}
		if b != nil {
			in.best, in.hasBest = b.ValScore, true
		}
		if in.hasBest {
			in.rep.Best = &in.best
		}
		return in, nil
	}
	if err := bestToBeat(ctx, e, in); err != nil {
		return nil, err
	}
	// No second look at the test split: a tree scored before keeps its score, so an agent
	// cannot fish for a lucky run by gating the same candidate again.
	prior, err := loadReceipt(e.ws(), heldOut(e), in.rep.Tree)
	if err != nil {
		return nil, err
	}
	if in.conditions, err = runConditions(e.ledger(), e.CleanRoom); err != nil {
		return nil, err
	}
	in.reuse(prior, opts, e.CleanRoom)
	if in.stale {
		fmt.Fprintf(e.log(), "hgate: this tree was rejected against a best of %.4f, which has moved to %.4f since: its test split runs again (pooled with its earlier run)\n", *prior.Best, in.best)
	}
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
func readState(e *Env, in *inputs) error {
	ws := e.ws()
	sp, err := store{e}.loadSplit()
	if err != nil {
		return err
	}
	// No gate over nothing: a mean over zero test tasks would pass every change.
	if err := emptySide(ws, sp); err != nil {
		return err
	}
	st, err := loadState(ws, heldOut(e))
	if err != nil {
		return err
	}
	if st.suite == nil || st.train == nil || !st.hasRows {
		return fmt.Errorf("the workspace %s is incomplete (suite.json, train_results.json and results.tsv are needed): run hgate prepare", ws)
	}
	in.sp, in.st = sp, st
	b, ok := bestOf(st.rows, nil, nil, "", 0) // the best as without trials; with them, bestToBeat
	in.best, in.hasBest = b.ValScore, ok
	return nil
}

// bestToBeat decides how Step 2 compares: with trials or a margin, task by task with the
// best's own trials (scored first when the best has none yet), else with the best's
// val_score.
func bestToBeat(ctx context.Context, e *Env, in *inputs) error {
	in.noisy = e.Config.Gate.Noisy()
	if in.noisy {
		br, err := store{e}.bestRecord()
		if err != nil {
			return err
		}
		if br != nil && br.trials == nil && !br.tree.IsZero() {
			if err := scoreBest(ctx, e, br, in.sp.Test, in.c); err != nil {
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
			b, _ := bestOf(in.st.rows, in.bestTrials, in.sp.Test, e.Config.Benchmark.TimeoutPolicy, e.Config.Gate.Confidence)
			in.best, in.hasBest = b.ValScore, true
		}
	}
	if in.hasBest {
		in.rep.Best = &in.best
	}
	// Step 2 must not lose to the commit the candidate replaces either.
	g, err := store{e}.gatedFor(in.sp.Test, in.st.rows, in.noisy)
	in.gated = g
	return err
}

// bar is what a one-trial val_score must reach: the best, and the gated commit's score.
func (in *inputs) bar() float64 {
	if in.gated != nil && !in.noisy {
		return max(in.best, in.gated.score)
	}
	return in.best
}

// refs are the per-task records Step 2 compares with: the best's, then the gated commit's.
func (in *inputs) refs() []Trials {
	refs := []Trials{in.bestTrials}
	if in.gated != nil {
		refs = append(refs, in.gated.trials)
	}
	return refs
}

// reuse decides whether Step 2 is prior's score (cached) and whether new trials pool with
// prior's (pooled). A score is reused only for the same test split, never with --rerun,
// never from outside the clean room inside it, only from a receipt opts.Trust holds when
// set, and with trials only from a receipt that kept them.
func (in *inputs) reuse(prior *Receipt, opts Options, cleanRoom bool) {
	in.prior = prior
	same := prior != nil && prior.TestTasks == len(in.sp.Test)
	in.stale = same && in.staleRejection(prior)
	in.cached = same && !opts.Rerun && !in.stale && (prior.CleanRoom || !cleanRoom) &&
		(opts.Trust == nil || opts.Trust.Wrote(in.rep.Tree)) && (!in.noisy || prior.TestResults != nil)
	// A tree's samples pool, whatever the trials: --rerun (or a stale rejection) adds to
	// its earlier ones instead of replacing them, so running a tree again refines its
	// estimate and cannot fish for luck.
	in.pooled = !in.cached && (opts.Rerun || in.stale) && same && prior.TestResults != nil && prior.Conditions == in.conditions
}

// staleRejection reports whether prior rejected the tree against a best whose score has
// moved since: that verdict no longer answers, and the tree is scored again.
func (in *inputs) staleRejection(prior *Receipt) bool {
	return prior.Verdict == "reject" && prior.Best != nil && in.hasBest && round4(*prior.Best) != round4(in.best)
}

// runsTest reports whether Step 2 runs the test split now.
func (in *inputs) runsTest() bool { return !in.cached && !in.pending }

// firstTrial numbers the first trial Step 2 runs: after prior's when they pool.
func (in *inputs) firstTrial() int {
	if in.pooled {
		return 1 + len(in.prior.TestResults[in.sp.Test[0]])
	}
	return 1
}

// runConditions names what the test split runs under: the clean room on or off and the
// carried files as the ledger l accepted them. A --rerun after either changed (a cache put
// in place, a room turned on) is a new measurement, not another sample of the same one.
func runConditions(l *ledger.Ledger, cleanRoom bool) (string, error) {
	carry, err := l.Carry()
	if err != nil {
		return "", err
	}
	data, err := json.Marshal(struct {
		CleanRoom bool             `json:"clean_room"`
		Carry     *ledger.Manifest `json:"carry"`
	}{cleanRoom, carry})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8]), nil
}
