package ledger

// Reset: starting over on purpose. The ledger's history is never rewritten: a reset is
// one more commit, "manual reset: ...", whose tree holds no state file and no carry
// manifest, only the anchors (refs/hgate/gated at the new baseline, refs/hgate/best
// cleared). The old state stays reachable as its parent, and `hgate state log` walks
// through it. After a crash between the commit and the file removals, the files left
// are exactly the parent's: Verify removes them as an interrupted write.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fault"
)

// ResetReport says what Reset ended.
type ResetReport struct {
	Entry    plumbing.Hash // the reset's own ledger commit
	Previous plumbing.Hash // the tip it ends, now its parent (zero: there was no ledger)
	Removed  []string      // state files removed from the workspace, as messages name them
	Gated    plumbing.Hash // where refs/hgate/gated was (zero: absent)
	Best     plumbing.Hash // where refs/hgate/best was (zero: absent)
}

// Reset ends the ledger's state on purpose: it records a commit dropping every state
// file and the carry manifest, with refs/hgate/gated at gated and refs/hgate/best
// cleared, then removes every state file from the workspace (whatever its kind, and
// those the ledger never held) and moves the refs. It reads neither the workspace nor
// the refs as evidence: a drifted state or a moved anchor is ended like any other.
// Callers hold the repository lock.
func (l *Ledger) Reset(gated plumbing.Hash, message string) (*ResetReport, error) {
	if gated.IsZero() {
		return nil, errors.New("ledger: reset: no commit to gate")
	}
	tip, err := l.Tip()
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	cur, err := currentRefs(l.repo)
	if err != nil {
		return nil, err
	}
	rep := &ResetReport{Previous: tip, Gated: cur[gitguard.GatedRef], Best: cur[gitguard.BestRef]}
	old, err := l.repo.BlobHashesAt(tip)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	changes := map[string][]byte{}
	for name := range old {
		if Tracked(name) || isMeta(name) {
			changes[name] = nil
		}
	}
	refs := refSet{gitguard.GatedRef: gated, gitguard.BestRef: plumbing.ZeroHash}
	changes[refsFile] = refs.marshal()
	if err := l.record(message, changes); err != nil {
		return nil, err
	}
	if rep.Entry, err = l.Tip(); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	fault.Point("ledger-recorded")
	if rep.Removed, err = l.removeState(); err != nil {
		return rep, fmt.Errorf("%w (the reset is recorded: run hgate prepare --reset again)", err)
	}
	for _, name := range anchorRefs {
		if err := moveRef(l.repo, name, refs[name], cur[name]); err != nil {
			return rep, fmt.Errorf("%w (the ledger holds where it belongs: the next hgate command finishes the move)", err)
		}
	}
	return rep, nil
}

// removeState removes every state file in the workspace, in name order, and a receipts
// "folder" that is not one; an emptied receipts folder goes too.
func (l *Ledger) removeState() ([]string, error) {
	d, err := l.scan()
	if err != nil {
		return nil, err
	}
	var removed []string
	if d.receiptsKind != kindNone {
		if err := os.Remove(l.path(receiptsDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("remove %s: %w", l.Display(receiptsDir), err)
		}
		removed = append(removed, l.Display(receiptsDir))
	}
	for _, name := range d.names() {
		if err := os.RemoveAll(l.path(name)); err != nil {
			return removed, fmt.Errorf("remove %s: %w", l.Display(name), err)
		}
		removed = append(removed, l.Display(name))
	}
	if d.receiptsKind == kindNone {
		_ = os.Remove(l.path(receiptsDir)) // only when empty: anything else in it is not hgate's
	}
	return removed, nil
}
