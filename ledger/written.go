package ledger

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/internal/statefile"
)

// A crash between the ledger commit and the file writes leaves the files as they were
// before the commit, written up to some point in name order. The last file of a write
// deleted by hand looks the same. To tell them apart, hgate notes in this worktree's git
// folder the ledger commit whose files it has all written (Commit after its writes;
// Verify and Restore once the disk matches): with the note at the tip, a file that
// differs was changed afterwards, and is drift. Without the note (a crash, a repository
// from before it, a git folder hgate cannot write) Verify decides by the order of writes
// as before. The note only sharpens what is said: a roll-forward rewrites the ledger's
// content, never the disk's, whichever way it is decided.
const writtenFile = "hgate-ledger-written"

func (l *Ledger) writtenPath() string { return filepath.Join(l.repo.GitDir(), writtenFile) }

// written returns the ledger commit whose files hgate last finished writing (zero: none noted).
func (l *Ledger) written() plumbing.Hash {
	data, err := os.ReadFile(l.writtenPath())
	if err != nil {
		return plumbing.ZeroHash
	}
	s := string(bytes.TrimSpace(data))
	if !plumbing.IsHash(s) {
		return plumbing.ZeroHash
	}
	return plumbing.NewHash(s)
}

// markWritten notes that the disk holds every file of commit. Best effort: without the
// note, Verify falls back on the order of writes.
func (l *Ledger) markWritten(commit plumbing.Hash) {
	if commit.IsZero() || l.written() == commit {
		return
	}
	_ = statefile.WriteAtomic(l.writtenPath(), []byte(commit.String()+"\n"))
}
