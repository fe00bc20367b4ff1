package gitguard

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Each worktree keeps its own hgate state: its workspace folder is its own (gitignored,
// not shared), so the ledger, the anchors and the loop's attempts must be too, or a gate
// in one worktree would read as drift in another. Refs live in the common git folder,
// shared by every worktree: the main worktree keeps hgate's refs under refs/hgate/ as it
// always has (every existing repository stays valid), a linked worktree (git worktree add)
// under refs/hgate/worktrees/<id>/, <id> being git's own name for it (the folder under
// .git/worktrees/). Callers name refs as the main worktree does ("refs/hgate/ledger");
// Repo maps them, so every package sees its worktree's refs under the same names.

// worktreeID is git's name for a linked worktree whose own git folder is gitDir, or ""
// for the main worktree (and a submodule, which has no common folder of its own).
func worktreeID(gitDir, commonDir string) string {
	if gitDir == commonDir || filepath.Base(filepath.Dir(gitDir)) != "worktrees" {
		return ""
	}
	id := filepath.Base(gitDir)
	if plumbing.ReferenceName(worktreeRefs+id+"/ledger").Validate() != nil {
		// git makes worktree names valid ref components; an older git may not have.
		sum := sha256.Sum256([]byte(id))
		id = hex.EncodeToString(sum[:8])
	}
	return id
}

// Worktree returns the id under which a linked worktree keeps its hgate refs, or "" in the
// main worktree.
func (r *Repo) Worktree() string { return r.worktree }

// RefName returns where a ref hgate names ("refs/hgate/gated") is stored in this
// worktree: for messages that tell a human which git command to run.
func (r *Repo) RefName(name string) string {
	if r.worktree == "" || !strings.HasPrefix(name, RefPrefix) {
		return name
	}
	return worktreeRefs + r.worktree + "/" + strings.TrimPrefix(name, RefPrefix)
}

// MainRef reads a ref as the main worktree names it, whichever worktree this is.
func (r *Repo) MainRef(name string) (plumbing.Hash, error) { return r.rawRefStore().Hash(name) }

// refAsNamed is RefName's inverse: the name hgate uses for a stored ref, and false for a
// ref that belongs to another worktree's hgate state.
func (r *Repo) refAsNamed(stored string) (string, bool) {
	if r.worktree == "" {
		return stored, !strings.HasPrefix(stored, worktreeRefs)
	}
	if rest, ok := strings.CutPrefix(stored, worktreeRefs+r.worktree+"/"); ok {
		return RefPrefix + rest, true
	}
	return stored, !strings.HasPrefix(stored, RefPrefix)
}
