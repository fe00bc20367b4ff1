package gitguard

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/index"
	"github.com/hgate/hgate/gitguard/internal/objstore"
)

// CheckStaged checks the commit the index would make, for the pre-commit
// hook: every path whose staged entry differs from HEAD's tree (added,
// deleted, renamed, modified, mode or type changed) outside allow is a
// violation, and so are changes refused even on an allowed path (a gitlink,
// a file turned into a symlink, a symlink leading out of the repository).
// Unlike Check it never looks at the worktree: unstaged edits are not part
// of the commit. Intent-to-add entries are left out, as git commit leaves
// them out; an unmerged path is an error, as it is for git commit.
//
// indexFile is the index to read ("" = the worktree's own index); a
// relative path is taken from the worktree root, where git runs hooks. The
// entries are hashed into trees in memory and compared with HEAD's trees
// one directory at a time, so only directories with staged changes are read
// from the object database. Where the index's cache-tree extension has a
// valid node, git commit takes the node's tree instead of the entries, and so
// does this check (see internal/index, cachetree.go). Hints
// unstage the change and keep the edit on disk. The result is sorted by path.
// It maps the index and never unmaps it (see index.ReadMapped): a process
// calls it once, as the hook does.
func (r *Repo) CheckStaged(allow []string, indexFile string) ([]Violation, error) {
	// HEAD's tree is read while the index is; the object store is then
	// used by one goroutine at a time again.
	type headResult struct {
		tree plumbing.Hash
		err  error
	}
	headDone := make(chan headResult, 1)
	go func() {
		_, t, err := r.Head()
		headDone <- headResult{t, err}
	}()
	// The snapshot's reader resolves indexFile and explains a split index. The hook's
	// process reads one index and exits: a mapping it never unmaps is the cheap read.
	s := &snapshot{r: r, mapped: true}
	err := s.readIndex(Options{IndexFile: indexFile})
	head := <-headDone
	if err != nil {
		return nil, err
	}
	for i := range s.idx.Entries {
		if e := &s.idx.Entries[i]; e.Stage != 0 {
			return nil, fmt.Errorf("read index %s: %w", s.indexPath, index.Unmerged(e.Path))
		}
	}
	var cache *index.CacheTree
	if s.idx.CacheTree != nil {
		if cache, err = index.ParseCacheTree(s.idx.CacheTree); err != nil {
			return nil, fmt.Errorf("read index %s: %w", s.indexPath, err)
		}
	}
	objects := r.objects().Checker()
	indexTree, mem, trusted, err := index.CommitTree(s.idx.Entries, cache, objects.Has)
	objects.Close()
	if err != nil {
		return nil, fmt.Errorf("read index %s: %w", s.indexPath, err)
	}
	headTree, unborn := objstore.EmptyTree, false
	if errors.Is(head.err, ErrNoCommits) {
		unborn = true
	} else if head.err != nil {
		return nil, head.err
	} else {
		headTree = head.tree
	}
	changes, err := r.objects().Trees(mem).Diff(headTree, indexTree)
	if err != nil {
		return nil, err
	}
	// Symlinks resolve in the tree being committed, built from the entries
	// only when one changed; where cache-tree nodes stood in for entries, the
	// entries must make the same tree.
	for _, c := range changes {
		if c.To.Mode != filemode.Symlink || trusted == 0 {
			continue
		}
		if full, _, err := index.HashTrees(s.idx.Entries); err != nil || full != indexTree {
			return nil, fmt.Errorf("read index %s: its cache-tree extension does not match its entries; run git read-tree HEAD, then stage the changes again", s.indexPath)
		}
		break
	}
	view := func() *linkView {
		v := newLinkView(func(p string) (string, error) {
			k := s.entryIndex(p)
			if k < 0 {
				return "", fmt.Errorf("%s: not in the index", p)
			}
			data, err := r.objects().Blob(s.idx.Entries[k].Hash)
			return string(data), err
		})
		for i := range s.idx.Entries {
			if e := &s.idx.Entries[i]; !e.IntentToAdd {
				v.add(e.Path, e.FileMode())
			}
		}
		return v
	}
	return r.judgeStaged(changes, NewMatcher(allow), unborn, view), nil
}

// judgeStaged turns the staged changes outside allow, and those refused on
// any path, into violations sorted by path.
func (r *Repo) judgeStaged(changes []objstore.Change, allow *Matcher, unborn bool, viewOf func() *linkView) []Violation {
	var view *linkView
	sort.Slice(changes, func(i, j int) bool { return changes[i].Path < changes[j].Path })
	added := map[plumbing.Hash]string{}
	for _, c := range changes {
		if _, ok := added[c.To.Hash]; !ok && c.From.Mode == 0 {
			added[c.To.Hash] = c.Path
		}
	}
	var out []Violation
	for _, c := range changes {
		var notes []string
		switch c.To.Mode {
		case filemode.Submodule:
			notes = append(notes, "submodule (gitlink) added or changed")
		case filemode.Symlink:
			if c.From.Mode != 0 && c.From.Mode != filemode.Symlink {
				notes = append(notes, objstore.ModeKind(c.From.Mode)+" became a symlink")
			}
			// git add stores the blob before the hook runs; an unreadable
			// target cannot be vouched for.
			t := "(unreadable)"
			if data, err := r.objects().Blob(c.To.Hash); err == nil {
				t = string(data)
			}
			if view == nil {
				view = viewOf()
			}
			if why := view.resolveLink(c.Path, t, ""); why != "" {
				notes = append(notes, fmt.Sprintf("symlink to %s %s", t, why))
			}
		}
		if len(notes) == 0 && allow.Match(c.Path, false) {
			continue
		}
		v := Violation{Path: c.Path, Kind: "modified"}
		switch {
		case c.From.Mode == 0:
			v.Kind = "added"
		case c.To.Mode == 0:
			v.Kind = "deleted"
			if to, ok := added[c.From.Hash]; ok {
				v.Kind = "renamed"
				notes = append([]string{"renamed to " + to}, notes...)
			}
		case kindOf(c.From.Mode) != kindOf(c.To.Mode):
			v.Kind = "type"
		case c.From.Hash == c.To.Hash:
			v.Kind = "mode"
			notes = append([]string{fmt.Sprintf("mode %s → %s", c.From.Mode, c.To.Mode)}, notes...)
		}
		v.Detail = strings.Join(append([]string{"staged"}, notes...), "; ")
		// Unstaging keeps the edit on disk: the hook never throws work away.
		if c.From.Mode == 0 || unborn {
			v.Hint = "git rm --cached -q -- " + shellQuote(c.Path)
		} else {
			v.Hint = "git restore --staged -- " + shellQuote(c.Path)
		}
		out = append(out, v)
	}
	return out
}
