package ledger

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
)

// AdoptShared moves a linked worktree onto a ledger of its own. Before hgate kept one
// per worktree, every worktree shared refs/hgate/ledger; a linked worktree whose
// workspace still matches that ledger's tip exactly is the one that wrote it, and takes
// it over: its own ledger starts at that commit (history kept) and its anchors where the
// commit puts them. Anything else — the main worktree, a linked worktree with a ledger
// of its own, an empty workspace, files that differ — is left to Verify. It returns a
// line saying what it did, or "".
func (l *Ledger) AdoptShared() (string, error) {
	if l.repo.Worktree() == "" {
		return "", nil
	}
	own, err := l.Tip()
	if err != nil || !own.IsZero() {
		return "", err
	}
	shared, err := l.repo.MainRef(gitguard.LedgerRef)
	if err != nil || shared.IsZero() {
		return "", err
	}
	d, err := l.scan()
	if err != nil || d.empty() {
		return "", err
	}
	want, err := l.repo.BlobHashesAt(shared)
	if err != nil {
		return "", fmt.Errorf("ledger: %w", err)
	}
	if len(compare(d, want)) > 0 {
		return "", nil
	}
	refs, have, err := refsAt(l.repo, shared)
	if err != nil {
		return "", err
	}
	if !have {
		refs = refSet{}
		for _, name := range anchorRefs {
			if refs[name], err = l.repo.MainRef(name); err != nil {
				return "", err
			}
		}
	}
	// Anchors first: a crash before the ledger ref leaves this worktree still unadopted,
	// and the next command adopts again.
	cur, err := currentRefs(l.repo)
	if err != nil {
		return "", err
	}
	for _, name := range anchorRefs {
		if err := moveRef(l.repo, name, refs[name], cur[name]); err != nil {
			return "", err
		}
	}
	if err := l.repo.SetRef(gitguard.LedgerRef, shared, plumbing.ZeroHash); err != nil {
		return "", fmt.Errorf("ledger: %w", err)
	}
	return fmt.Sprintf("%s: this linked worktree now keeps its own ledger (%s), started from the shared %s its state files match", l.prefix, l.repo.RefName(gitguard.LedgerRef), gitguard.LedgerRef), nil
}
