package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/gitguard/internal/walk"
	"github.com/hgate/hgate/internal/fsafe"
)

// This file holds the git operations of the unattended loop: commit the gated
// candidate, keep a rejected attempt under a ref, and put the worktree back.
// Each works from the same snapshot the guard uses, so "ignored" means the
// same thing everywhere and ignored paths (the workspace) are never touched.

// Signature is a commit's author: who, and when.
type Signature = objstore.Signature

// CommitCandidate commits exactly the candidate tree (HEAD's tree plus the
// allowed changes on disk) with HEAD as parent, moves the current branch (or a
// detached HEAD) to it with compare-and-set, and updates the index entries of
// the committed paths so git status shows them clean. Forbidden changes stay
// where they are, uncommitted.
func (r *Repo) CommitCandidate(opts Options, message string, author Signature) (plumbing.Hash, error) {
	since := time.Now()
	head, headTree, err := r.Head()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	s, st, err := r.snapshot(opts)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	stats := map[string]walk.Stat{}
	tree, err := r.candidate(s, st, stats)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	c, err := r.objects().WriteCommit(tree, message, author, head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.moveHead(c, head); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.syncIndex(headTree, tree, stats, since); err != nil {
		return c, fmt.Errorf("commit %s made, but the index was not updated: %w", short(c), err)
	}
	return c, nil
}

// SyncIndex makes the index entries of the paths that differ between the tree
// of commit from and HEAD's tree equal HEAD's. It finishes a CommitCandidate
// interrupted after the branch moved.
func (r *Repo) SyncIndex(from plumbing.Hash) error {
	since := time.Now()
	fromTree, err := r.objects().TreeOf(from)
	if err != nil {
		return err
	}
	_, headTree, err := r.Head()
	if err != nil {
		return err
	}
	return r.syncIndex(fromTree, headTree, nil, since)
}

// SaveAttempt keeps everything the worktree holds beyond HEAD — tracked
// changes, untracked files that are not ignored, forbidden edits included —
// as a commit whose parent is HEAD, under ref (which must not exist yet). No
// branch moves and nothing on disk changes. Ignored paths are not saved.
func (r *Repo) SaveAttempt(opts Options, ref, message string, author Signature) (plumbing.Hash, error) {
	head, _, s, st, err := r.headState(opts)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.saveAttempt(s, st, head, ref, message, author)
}

// RestoreHead makes the worktree and the index equal HEAD: changed or deleted
// tracked files are written back from HEAD, files HEAD does not hold and the
// ignore rules do not hide are removed, and the index is rewritten. Ignored
// paths are left alone; a nested repository is left where it is.
func (r *Repo) RestoreHead(opts Options) error {
	since := time.Now()
	_, headTree, _, st, err := r.headState(opts)
	if err != nil {
		return err
	}
	return r.restoreHead(st, headTree, since)
}

// SaveAttemptAndRestore is SaveAttempt then RestoreHead from a single walk of
// the worktree (saving changes nothing on disk), so what is removed or
// written back is exactly what was saved. A file that appears between the
// walk and the restore is neither saved nor touched.
func (r *Repo) SaveAttemptAndRestore(opts Options, ref, message string, author Signature) (plumbing.Hash, error) {
	since := time.Now()
	head, headTree, s, st, err := r.headState(opts)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	c, err := r.saveAttempt(s, st, head, ref, message, author)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.restoreHead(st, headTree, since); err != nil {
		return c, fmt.Errorf("attempt saved as %s, but the worktree was not restored: %w", short(c), err)
	}
	return c, nil
}

// headState walks the worktree against HEAD.
func (r *Repo) headState(opts Options) (head, headTree plumbing.Hash, s *snapshot, st *state, err error) {
	head, headTree, err = r.Head()
	if err != nil {
		return
	}
	opts.Base = head
	s, st, err = r.snapshot(opts)
	return
}

func (r *Repo) saveAttempt(s *snapshot, st *state, head plumbing.Hash, ref, message string, author Signature) (plumbing.Hash, error) {
	tree, err := r.worktreeTree(s, st)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	c, err := r.objects().WriteCommit(tree, message, author, head)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if err := r.updateRef(ref, c, plumbing.ZeroHash); err != nil {
		return plumbing.ZeroHash, err
	}
	return c, nil
}

// worktreeTree stores and returns HEAD's tree with everything the worktree holds beyond
// it (allowed or not, untracked and not ignored included); a special file or one over
// the size bound keeps HEAD's entry, never read.
func (r *Repo) worktreeTree(s *snapshot, st *state) (plumbing.Hash, error) {
	dir, err := r.openRoot()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer dir.Close()
	root := &objstore.Edit{}
	for _, p := range sortedPaths(st) {
		ps := st.paths[p]
		if ps.nested || ps.w.same(ps.h) && !ps.untracked {
			continue
		}
		switch {
		case !ps.w.present:
			root.Set(p, nil)
		case ps.w.huge > 0 || ps.w.unreadable || ps.w.hardlink || ps.w.long:
			// Over gate.max_file_bytes: never read; the attempt keeps HEAD's entry.
		case ps.w.mode == filemode.Regular || ps.w.mode == filemode.Executable || ps.w.mode == filemode.Symlink:
			mode := ps.w.mode
			if fi, err := dir.Lstat(p); err == nil && fi.Mode().IsRegular() {
				mode = filemode.Regular
				if fi.Mode()&0o100 != 0 {
					mode = filemode.Executable
				}
			}
			h, _, err := r.storeFile(dir, p, mode, s.maxFile)
			if errors.Is(err, os.ErrNotExist) {
				root.Set(p, nil) // removed while we looked: keep what is there
				continue
			}
			if err != nil {
				return plumbing.ZeroHash, err
			}
			root.Set(p, &objstore.Entry{Mode: mode, Hash: h})
		}
	}
	return s.tr.Apply(s.headTree, root)
}

// removeAdded removes what the worktree holds and HEAD does not, deepest first, so a file
// can take the place of a directory.
func removeAdded(root *fsafe.Root, st *state, paths []string) error {
	for i := len(paths) - 1; i >= 0; i-- {
		ps := st.paths[paths[i]]
		if ps.h.present || !ps.w.present || ps.nested {
			continue
		}
		remove := root.Remove
		if ps.w.long || ps.w.mode == filemode.Dir {
			remove = root.RemoveAll // a folder the walk left unread, however deep or locked
		}
		if err := remove(ps.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("restore: remove %s: %w", ps.path, err)
		}
		removeEmptyParents(root, ps.path)
	}
	return nil
}

// restoreWritten, when set by a test, runs after restore wrote a file: a
// background process of the agent editing it again.
var restoreWritten func(p string)

func (r *Repo) restoreHead(st *state, headTree plumbing.Hash, since time.Time) error {
	root, err := r.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	paths := sortedPaths(st)
	if err := removeAdded(root, st, paths); err != nil {
		return err
	}
	changed := map[string]objstore.Entry{}
	stats := map[string]walk.Stat{}
	for _, p := range paths {
		ps := st.paths[p]
		if !ps.h.present {
			changed[p] = objstore.Entry{}
			continue
		}
		changed[p] = objstore.Entry{Mode: ps.h.mode, Hash: ps.h.hash}
		if ps.w.same(ps.h) || ps.h.mode == filemode.Submodule {
			continue
		}
		if ps.w.unreadable {
			reclaimParents(root, p)
		}
		fs, err := r.writeFromTree(root, p, ps.h.mode, ps.h.hash)
		if err != nil {
			return objstore.ForPath(err, "restore", p)
		}
		stats[p] = fs
		if restoreWritten != nil {
			restoreWritten(p)
		}
	}
	return r.editIndex(headTree, changed, stats, since, true)
}

func sortedPaths(st *state) []string {
	out := make([]string, 0, len(st.paths))
	for p := range st.paths {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// MoveBranch points the branch HEAD names (or a detached HEAD) at new if it
// still points at old. The worktree and index are not touched.
func (r *Repo) MoveBranch(new, old plumbing.Hash) error { return r.moveHead(new, old) }

// moveHead moves the branch HEAD names, or a detached HEAD, from old to new.
func (r *Repo) moveHead(new, old plumbing.Hash) error {
	head, err := r.refStore().Read("HEAD")
	if err != nil {
		return fmt.Errorf("read HEAD: %w", err)
	}
	if branch, ok := strings.CutPrefix(head, "ref: "); ok {
		return r.updateRef(branch, new, old)
	}
	return r.updateRef("HEAD", new, old)
}

// syncIndex sets the index entries of every path that differs between two
// trees to the second tree's entry, with the stat data in stats (taken when
// the content was read) or none.
func (r *Repo) syncIndex(from, to plumbing.Hash, stats map[string]walk.Stat, since time.Time) error {
	tr := r.objects().Trees(nil)
	cs, err := tr.Diff(from, to)
	if err != nil {
		return err
	}
	changed := map[string]objstore.Entry{}
	for _, c := range cs {
		changed[c.Path] = c.To
	}
	return r.editIndex(to, changed, stats, since, false)
}

// writeFromTree writes a blob from the object database at p under root, replacing
// whatever is there, and returns the stat data of what it wrote. A parent that is a
// symlink or a file is replaced by a directory first, and every step is taken relative
// to root's descriptor without following a link at any component (fsafe): a link the
// agent planted at a parent folder, even one swapped in while hgate works, is never
// written through.
func (r *Repo) writeFromTree(root *fsafe.Root, p string, mode filemode.FileMode, h plumbing.Hash) (walk.Stat, error) {
	if err := makeParents(root, p); err != nil {
		return walk.Stat{}, err
	}
	if err := root.RemoveAll(p); err != nil {
		return walk.Stat{}, err
	}
	data, err := r.objects().Blob(h)
	if err != nil {
		return walk.Stat{}, err
	}
	if mode == filemode.Symlink {
		if err := root.Symlink(string(data), p); err != nil {
			return walk.Stat{}, err
		}
		fi, err := root.Lstat(p) // a symlink is never changed in place
		if err != nil {
			return walk.Stat{}, err
		}
		return walk.InfoStat(fi), nil
	}
	perm := os.FileMode(0o644)
	if mode == filemode.Executable {
		perm = 0o755
	}
	f, err := root.Create(p, perm)
	if err != nil {
		return walk.Stat{}, err
	}
	_, err = f.Write(data)
	var fi os.FileInfo
	if err == nil {
		fi, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return walk.Stat{}, err
	}
	return walk.InfoStat(fi), nil
}

// makeParents makes every folder above p under root, replacing a link or a file found
// at one of their names (removed itself, never followed).
func makeParents(root *fsafe.Root, p string) error {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		fi, err := root.Lstat(dir)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			if err := root.Remove(dir); err != nil {
				return err
			}
		case !errors.Is(err, os.ErrNotExist):
			return err
		}
		if err := root.Mkdir(dir, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// removeEmptyParents removes the directories above p under root that became empty.
func removeEmptyParents(root *fsafe.Root, p string) {
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		if root.Remove(d) != nil {
			return
		}
	}
}

// reclaimParents gives p's folders back to their owner where their rights were taken
// (an agent's chmod 000 of a tracked folder), so that restore can write p again. A
// folder that cannot be had is left for the write to report.
func reclaimParents(root *fsafe.Root, p string) {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d, err := root.OpenDirOwned(strings.Join(parts[:i], "/"))
		if err != nil {
			return
		}
		d.Close()
	}
}

// openRoot opens the worktree's root folder for fsafe: every name under it is then
// resolved from its descriptor, never following a link.
func (r *Repo) openRoot() (*fsafe.Root, error) {
	root, err := fsafe.OpenRoot(r.root)
	if err != nil {
		return nil, fmt.Errorf("open worktree %s: %w", r.root, err)
	}
	return root, nil
}

// BreakRefLocks removes the lock files a killed hgate may have left on the
// branch HEAD names and on the given refs. Only for a caller that knows the
// previous holder is dead (the loop resuming its own run).
func (r *Repo) BreakRefLocks(names ...string) { r.refStore().BreakLocks(names...) }
