package ledger

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/go-git/go-git/v5/plumbing"
)

// Reading the ledger's past, for a report of the state's history: a state file as an
// earlier ledger commit held it, and where that commit put the anchors.

// FileAt returns a state file (a name relative to the workspace) as the ledger commit
// holds it; nil when it holds none.
func (l *Ledger) FileAt(commit plumbing.Hash, name string) ([]byte, error) {
	if !Tracked(name) {
		return nil, fmt.Errorf("ledger: %s: not a state file", name)
	}
	return l.fileAt(commit, name)
}

// fileAt returns a file of a ledger commit's tree; nil when it holds none.
func (l *Ledger) fileAt(commit plumbing.Hash, name string) ([]byte, error) {
	data, err := l.repo.FileAt(commit, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return data, nil
}

// AnchorAt returns where the ledger commit put an anchor ref (GatedRef, BestRef); ok is
// false for a commit older than anchors.
func (l *Ledger) AnchorAt(commit plumbing.Hash, ref string) (h plumbing.Hash, ok bool, err error) {
	s, ok, err := refsAt(l.repo, commit)
	if err != nil || !ok {
		return plumbing.ZeroHash, false, err
	}
	return s[ref], true, nil
}
