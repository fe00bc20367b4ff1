package gate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// Refused is a "no" from hgate: the answer to the question asked is negative (exit 1), as
// opposed to an error that kept hgate from answering (exit 2).
type Refused struct{ Reason string }

func (r *Refused) Error() string { return r.Reason }

func refuse(format string, a ...any) error { return &Refused{Reason: fmt.Sprintf(format, a...)} }

// RecordOptions are the numbers a caller may claim; each must match the receipt.
type RecordOptions struct {
	ValScore    *float64
	EvalsPassed *int
	EvalsTotal  *int
}

// RecordReport says which row record wrote, or found already written.
type RecordReport struct {
	Row     record.Row
	Already bool // HEAD was recorded before; nothing was appended
	NewBest bool
	// Uncommitted: with Already, the worktree's candidate tree when the gate passed it and
	// it is not HEAD's: a gated change the user has not committed yet.
	Uncommitted string
}

// RecordRow appends the results.tsv row for HEAD from the gate's receipt for HEAD's tree. It
// refuses when HEAD's tree did not pass the gate, when a claimed number differs from the
// receipt, or when the commits since the last gated commit touch paths outside allow. Then
// it moves refs/hgate/gated (and refs/hgate/best on a new best) to HEAD.
func RecordRow(e *Env, opts RecordOptions) (*RecordReport, error) {
	head, tree, err := e.Repo.Head()
	if err != nil {
		return nil, err
	}
	short := head.String()[:7]
	if err := (store{e}).verify(); err != nil {
		return nil, err
	}
	data, rows, err := recordedRows(e)
	if err != nil {
		return nil, err
	}
	rc, err := passingReceipt(e, tree, short)
	if err != nil {
		return nil, err
	}
	if err := checkClaims(opts, rc); err != nil {
		return nil, err
	}
	gated, err := e.Repo.Ref(gitguard.GatedRef)
	if err != nil {
		return nil, err
	}
	if err := (recording{e}).checkRange(gated, head); err != nil {
		return nil, err
	}
	c := changes{}
	rep, err := recordedRow(e, rows, data, rc, c, head, tree)
	if err != nil {
		return nil, err
	}
	if err := commitRecord(e, rep, rc, c, gated, head); err != nil {
		return nil, err
	}
	return rep, nil
}

// recordedRows is results.tsv and its rows. It and the receipt are read as the ledger
// holds them, and must still match the disk: a file swapped after verify is not taken on
// trust.
func recordedRows(e *Env) ([]byte, []record.Row, error) {
	data, err := store{e}.stored(workspace.Results)
	if err != nil {
		return nil, nil, err
	}
	if data == nil {
		return nil, nil, fmt.Errorf("%s does not exist: run hgate prepare first", e.ws().Results())
	}
	rows, err := record.Parse(e.ws().Results(), data)
	return data, rows, err
}

// passingReceipt is the ledger's receipt of HEAD's tree, refused when there is none or
// the gate rejected it.
func passingReceipt(e *Env, tree plumbing.Hash, short string) (*Receipt, error) {
	rc, err := store{e}.receipt(tree.String())
	if err != nil {
		return nil, err
	}
	switch {
	case rc == nil && recording{e}.passedUncommitted(tree) != "":
		return nil, refuse("HEAD (%s) was not gated, but the worktree holds a change the gate passed (tree %s) that is not committed: git commit it, then run hgate record", short, recording{e}.passedUncommitted(tree)[:7])
	case rc == nil:
		return nil, refuse("HEAD (%s) was not gated: its tree %s has no receipt; run hgate gate on these changes before committing them", short, tree.String()[:7])
	case rc.Verdict != "pass":
		return nil, refuse("the gate rejected HEAD's tree %s (val_score %.4f); only a passing tree is recorded", tree.String()[:7], rc.ValScore)
	}
	return rc, nil
}

// checkClaims refuses numbers the caller claims that differ from the receipt's.
func checkClaims(opts RecordOptions, rc *Receipt) error {
	var mismatch []string
	if opts.ValScore != nil && math.Abs(round4(*opts.ValScore)-rc.ValScore) > 5e-5 {
		mismatch = append(mismatch, fmt.Sprintf("--val-score %.4f does not match the receipt's %.4f", *opts.ValScore, rc.ValScore))
	}
	if opts.EvalsPassed != nil && *opts.EvalsPassed != rc.SuitePassed {
		mismatch = append(mismatch, fmt.Sprintf("--evals-passed %d does not match the receipt's %d", *opts.EvalsPassed, rc.SuitePassed))
	}
	if opts.EvalsTotal != nil && *opts.EvalsTotal != rc.SuiteTotal {
		mismatch = append(mismatch, fmt.Sprintf("--evals-total %d does not match the receipt's %d", *opts.EvalsTotal, rc.SuiteTotal))
	}
	if len(mismatch) > 0 {
		return refuse("%s (record takes its numbers from the gate's receipt; the flags are only checked)", strings.Join(mismatch, "; "))
	}
	return nil
}

// recordedRow is HEAD's row: the one recorded before (Already), or a new one appended to
// results.tsv in c, with whether HEAD is (or becomes) the best.
func recordedRow(e *Env, rows []record.Row, data []byte, rc *Receipt, c changes, head, tree plumbing.Hash) (*RecordReport, error) {
	short := head.String()[:7]
	rep := &RecordReport{}
	for _, r := range rows {
		if r.Commit == short {
			rep.Row, rep.Already = r, true
		}
	}
	if rep.Already {
		rep.Uncommitted = recording{e}.passedUncommitted(tree)
		// HEAD is the best exactly when it was the new best when recorded.
		at, err := e.Repo.Ref(gitguard.BestRef)
		if err != nil {
			return nil, err
		}
		rep.NewBest = at == head
		return rep, nil
	}
	b, hasBest := bestOf(rows, nil, nil, "", 0) // without trials; with them the receipt decides
	rep.Row = record.Row{
		Iteration: len(rows), ValScore: rc.ValScore, Commit: short,
		EvalsPassed: rc.SuitePassed, EvalsTotal: rc.SuiteTotal, Timestamp: e.Clock(),
	}
	if err := c.add(workspace.Results, func() ([]byte, error) { return record.AppendTo(e.ws().Results(), data, rep.Row) }); err != nil {
		return nil, err
	}
	rep.NewBest = !hasBest || rc.ValScore > b.ValScore
	if rc.Trials > 0 {
		// With trials the best moves only on the gate's confident, replicated improvement:
		// a kept change that merely scored higher by luck does not become the best.
		rep.NewBest = rc.NewBest
	}
	return rep, nil
}

// commitRecord writes the row, the receipt's promotions and the anchors' new places as
// one ledger commit; the refs move after the row is written, and a crash in between is
// finished by the next hgate command.
func commitRecord(e *Env, rep *RecordReport, rc *Receipt, c changes, gated, head plumbing.Hash) error {
	short := head.String()[:7]
	refs := map[string]plumbing.Hash{}
	if gated != head {
		refs[gitguard.GatedRef] = head
	}
	if rep.NewBest {
		refs[gitguard.BestRef] = head
	}
	added, err := recording{e}.promote(rc, c)
	if err != nil {
		return err
	}
	u := ledger.Update{Files: c, Refs: refs, BeforeRefs: func() { fault.Point("record-applied") }}
	if rep.Already {
		u.Message = fmt.Sprintf("record: commit %s already recorded as iteration %d; %s → %s", short, rep.Row.Iteration, gitguard.GatedRef, short)
	} else {
		u.Message = fmt.Sprintf("record: iteration %d, commit %s, val_score %.4f", rep.Row.Iteration, short, rep.Row.ValScore)
	}
	if added > 0 {
		u.Message += fmt.Sprintf(", promoted %d", added)
	}
	if len(c) > 0 || len(refs) > 0 {
		return store{e}.commit(u)
	}
	return nil
}

// recording is record's checks of the commits it records, and its promotions.
type recording struct{ *Env }

// promote adds the train tasks the receipt's Step 3 promoted to suite.json, in
// record's own ledger commit: a gate's promotions take effect when its tree is recorded,
// not before. It returns how many joined (none when recorded before).
func (r recording) promote(rc *Receipt, c changes) (int, error) {
	if len(rc.Promoted) == 0 {
		return 0, nil
	}
	data, err := store(r).stored(workspace.Suite)
	if err != nil {
		return 0, err
	}
	if data == nil {
		return 0, fmt.Errorf("%s does not exist: run hgate prepare first", r.ws().Suite())
	}
	s, err := suite.Parse(r.ws().Suite(), data)
	if err != nil {
		return 0, err
	}
	added := s.Promote(rc.Promoted...)
	if len(added) == 0 {
		return 0, nil
	}
	return len(added), c.add(workspace.Suite, s.Marshal)
}

// checkRange refuses commits since the last gated commit that change paths outside allow,
// as auto-harness's record checks HEAD~1..HEAD. file_guard: false turns it off with Step 0.
func (r recording) checkRange(gated, head plumbing.Hash) error {
	if gated.IsZero() || gated == head || !r.Config.FileGuard {
		return nil
	}
	paths, err := r.Repo.ChangedPaths(gated, head)
	if err != nil {
		return err
	}
	allow := gitguard.NewMatcher(r.Config.Allow)
	var bad []string
	for _, p := range paths {
		if !allow.Match(p, false) {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		return refuse("the commits since the last gated commit %s change paths outside allow: %s", gated.String()[:7], strings.Join(bad, ", "))
	}
	return nil
}

// stored returns a state file as the ledger tip holds it (nil when it holds none),
// after checking that the workspace still has the same bytes.
func (s store) stored(name string) ([]byte, error) {
	l := s.ledger()
	want, err := l.File(name)
	if err != nil {
		return nil, err
	}
	got, err := os.ReadFile(s.ws().Path(name))
	if errors.Is(err, fs.ErrNotExist) {
		got, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	if (want == nil) != (got == nil) || !bytes.Equal(want, got) {
		return nil, fmt.Errorf("%s differs from the ledger's copy (changed while hgate ran): run `hgate state restore`", l.Display(name))
	}
	return want, nil
}

// receipt is loadReceipt through stored: the receipt record keeps a tree by.
func (s store) receipt(tree string) (*Receipt, error) {
	data, err := s.stored(workspace.Receipt(tree))
	if err != nil || data == nil {
		return nil, err
	}
	var r Receipt
	path := s.ws().Receipt(tree)
	if err := statefile.DecodeJSON(path, data, &r); err != nil {
		return nil, err
	}
	return &r, r.unseal(heldOut(s.Env), path)
}

// passedUncommitted is the worktree's candidate tree when it is not head's tree and the
// gate passed it, else "": what a record run before git commit would leave unrecorded.
// It only reads; any error is "".
func (r recording) passedUncommitted(head plumbing.Hash) string {
	cand, _, err := r.Repo.Inspect(r.guardOptions())
	if err != nil || cand == head {
		return ""
	}
	if rc, err := store(r).receipt(cand.String()); err != nil || rc == nil || rc.Verdict != "pass" {
		return ""
	}
	return cand.String()
}
