package gate

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/record"
)

// Step 2 compares a candidate with two commits: the best, and the gated commit the
// candidate would replace. Comparing with the best alone lets a change that undoes a kept
// improvement back in whenever that improvement was not confirmed as a new best: the best
// is below it, so falling back to the best looks "not worse".

// reference is a commit Step 2 compares with, other than the best.
type reference struct {
	commit plumbing.Hash
	score  float64 // its val_score
	trials Trials  // its per-task test trials; nil without trials
}

// name says which commit a reason is about.
func (r *reference) name() string {
	return fmt.Sprintf("the gated commit %s (the one this change replaces)", r.commit.String()[:7])
}

// gatedReference is the gated commit as a second reference: nil when there is none, when
// its tree is the best's (one comparison is enough), or when it has no complete test-split
// score (marked gated by hand, or scored before trials were on), so there is nothing to
// compare with. baseline stands in for a tree that was never gated (prepare's HEAD).
func (s store) gatedReference(tests int, bestTree plumbing.Hash, base *Baseline, baseScore float64, noisy bool) (*reference, error) {
	gated, err := s.Repo.Ref(gitguard.GatedRef)
	if err != nil || gated.IsZero() {
		return nil, err
	}
	tree, err := s.Repo.TreeOf(gated)
	if err != nil {
		return nil, err
	}
	if tree == bestTree {
		return nil, nil
	}
	ref := &reference{commit: gated}
	rc, err := s.receipt(tree.String())
	if err != nil {
		return nil, err
	}
	switch {
	case rc != nil && rc.TestTasks == tests:
		ref.score, ref.trials = rc.ValScore, rc.TestResults
	case rc == nil && base != nil && base.Tree == tree.String():
		ref.score, ref.trials = baseScore, base.Test
	default:
		return nil, nil
	}
	if noisy && ref.trials == nil {
		return nil, nil
	}
	return ref, nil
}

// notWorse is Step 2's answer with one trial: score must reach the best and every other
// reference. against is the index in refs of the first one it falls below, or -1.
func notWorse(score, best float64, hasBest bool, refs []float64) (ok bool, against int) {
	if hasBest && score < best {
		return false, -1
	}
	for i, r := range refs {
		if score < r {
			return false, i
		}
	}
	return true, -1
}

// step applies the sequential rule after r rounds to d.cmps, the comparisons with the best
// (first) and with every other reference: a clear loser against any one of them is
// rejected at once; a clear keep must be one against all; undecided at the last round,
// each estimate must be within the margin. It reports whether the answer is reached; then
// d.against is the index of the comparison that rejected.
func (d *decision) step(r, trialsMin int, margin, confidence float64, last bool) bool {
	if r >= trialsMin {
		for i, c := range d.cmps {
			if c.High < -margin {
				d.keep, d.against = false, i
				d.why = fmt.Sprintf("a clear loser at %.0f%% confidence", 100*confidence)
				return true
			}
		}
		clear := true
		for _, c := range d.cmps {
			clear = clear && c.Low >= -margin
		}
		if clear {
			d.keep, d.why = true, fmt.Sprintf("not worse at %.0f%% confidence", 100*confidence)
			return true
		}
	}
	if !last {
		return false
	}
	d.keep, d.why = true, "undecided at the last trial: the estimate decides"
	for i, c := range d.cmps {
		if c.Delta < -margin {
			d.keep, d.against = false, i
			return true
		}
	}
	return true
}

// compareAll pairs cand with each of refs in turn.
func compareAll(cand Trials, refs []Trials, tasks []string, policy string, z float64) []comparison {
	out := make([]comparison, len(refs))
	for i, r := range refs {
		out[i] = compare(cand, r, tasks, policy, z)
	}
	return out
}

// gatedFor finds the gated commit's reference for a Step 2 over tests (see gatedReference).
func (s store) gatedFor(tests []string, rows []record.Row, noisy bool) (*reference, error) {
	br, err := s.bestRecord()
	if err != nil {
		return nil, err
	}
	base, err := s.baseline()
	if err != nil {
		return nil, err
	}
	var bestTree plumbing.Hash
	if br != nil {
		bestTree = br.tree
	}
	var baseScore float64
	if len(rows) > 0 {
		baseScore = rows[0].ValScore
	}
	return s.gatedReference(len(tests), bestTree, base, baseScore, noisy)
}

// refScores is the one-trial threshold of each reference.
func refScores(ref *reference) []float64 {
	if ref == nil {
		return nil
	}
	return []float64{ref.score}
}
