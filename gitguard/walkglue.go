package gitguard

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard/internal/walk"
)

// walk returns the snapshot's walk, walking now if it was not done yet.
func (s *snapshot) walk() (*walk.Result, error) {
	if s.walked != nil {
		return s.walked.w, s.walked.err
	}
	return s.walkWith(s.ignores)
}

// walkWith walks the worktree with the given .gitignore rules by directory.
func (s *snapshot) walkWith(rules map[string]patternList) (*walk.Result, error) {
	return walk.Walk(&walk.Input{
		Root: s.r.root, Entries: s.idx.Entries, Rules: rules, Extra: s.extra, Allow: s.allow,
		IndexMtimeS: s.idxMtimeS, IndexMtimeN: s.idxMtimeN, Submodule: submoduleHead,
		MaxFileBytes: s.maxFile, MaxPathBytes: MaxPathBytes,
	})
}

// submoduleHead is the commit a submodule's worktree has checked out; an
// unpopulated submodule counts as unchanged, as git counts it, and one that
// cannot be read counts as changed.
func submoduleHead(full string, recorded plumbing.Hash) plumbing.Hash {
	if _, err := walk.Lstat(full + "/.git"); err != nil {
		return recorded
	}
	r, err := openAt(full)
	if err != nil {
		return plumbing.ZeroHash
	}
	h, err := r.refStore().Resolve("HEAD")
	if err != nil {
		return plumbing.ZeroHash
	}
	return h
}
