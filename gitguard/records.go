package gitguard

// Records: small sets of files hgate keeps as commits on its own refs
// (refs/hgate/ledger), built blob → tree → commit with go-git and published
// with a compare-and-set of the ref, so two writers never lose each other's
// commit. Objects go through go-git's storage; the ref is moved by updateRef
// (a lock file and a rename, as git does), since go-git rewrites a loose ref
// in place and a kill in the middle would leave it empty.

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/hgate/hgate/gitguard/internal/objstore"
)

// RecordAuthorName and RecordAuthorEmail sign every record commit (as
// author and committer); the time is the time of the write.
const (
	RecordAuthorName  = "hgate"
	RecordAuthorEmail = "hgate@localhost"
)

// recordAttempts bounds how often CommitFiles rebuilds its commit after
// losing the race for the ref to another writer.
const recordAttempts = 10

// recBeforeSetRef, when set (by tests), runs between building a record
// commit and moving the ref: the window where another writer can win.
var recBeforeSetRef func(ref string)

// RefEntry is one commit of a record ref, newest first in LogRef.
type RefEntry struct {
	Hash    plumbing.Hash
	Message string    // without the trailing newline
	When    time.Time // committer time
	Changed []string  // slash paths that differ from the first parent, sorted
}

// CommitFiles records files as a new commit on ref, on top of the ref's
// current tip (a root commit when the ref does not exist). The new tree is the
// tip's tree with files applied: a non-nil value writes that path as a
// regular file, a nil value deletes it (deleting an absent path is a no-op).
// Paths are slash paths relative to the tree root; "receipts/a.json" makes a
// subtree. The commit is made even when no file changes, so an event can be
// recorded on its own.
//
// The ref moves only if it still holds the tip read at the start; when
// another writer got there first, the whole commit is rebuilt on the new tip
// (up to a few times), so concurrent writers each land and none is lost.
func (r *Repo) CommitFiles(ref string, files map[string][]byte, message string) (plumbing.Hash, error) {
	if !strings.HasPrefix(ref, "refs/") || plumbing.ReferenceName(ref).Validate() != nil {
		return plumbing.ZeroHash, fmt.Errorf("record %s: not a valid ref name under refs/", ref)
	}
	for p := range files {
		if err := recCheckPath(p); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("record %s: %w", ref, err)
		}
	}
	// Blobs do not depend on the tip: store them once.
	blobs := make(map[string]plumbing.Hash, len(files))
	for p, data := range files {
		if data == nil {
			continue
		}
		h, err := r.objects().Write(plumbing.BlobObject, data)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("record %s: store %s: %w", ref, p, err)
		}
		blobs[p] = h
	}
	for attempt := 1; ; attempt++ {
		h, err := r.recCommitOnce(ref, files, blobs, message)
		if !errors.Is(err, ErrRefChanged) {
			return h, err
		}
		if attempt == recordAttempts {
			return plumbing.ZeroHash, fmt.Errorf("record %s: gave up after %d attempts: %w", ref, attempt, err)
		}
		// Back off a little, with jitter, so two writers stop colliding.
		time.Sleep(time.Duration(attempt)*time.Millisecond + rand.N(2*time.Millisecond))
	}
}

func (r *Repo) recCommitOnce(ref string, files map[string][]byte, blobs map[string]plumbing.Hash, message string) (plumbing.Hash, error) {
	tip, err := r.Ref(ref)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	tr := r.objects().Trees(nil)
	flat := map[string]objstore.Entry{}
	var parents []plumbing.Hash
	if !tip.IsZero() {
		tree, err := r.objects().TreeOf(tip)
		if err == nil {
			err = tr.Files(tree, "", flat)
		}
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("record %s: read tip %s: %w", ref, tip, err)
		}
		parents = []plumbing.Hash{tip}
	}
	for p := range files {
		if h, ok := blobs[p]; ok {
			flat[p] = objstore.Entry{Name: path.Base(p), Mode: filemode.Regular, Hash: h}
		} else {
			delete(flat, p)
		}
	}
	root := &objstore.Edit{}
	for p, e := range flat {
		root.Set(p, &e)
	}
	tree, err := tr.Apply(objstore.EmptyTree, root)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("record %s: %w", ref, err)
	}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	sig := object.Signature{Name: RecordAuthorName, Email: RecordAuthorEmail, When: time.Now()}
	h, err := r.objects().WriteCommit(tree, message, sig, parents...)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("record %s: %w", ref, err)
	}
	if recBeforeSetRef != nil {
		recBeforeSetRef(ref)
	}
	// Lock file, compare, write, rename, as git does: a kill at any moment leaves the
	// ref either at its old commit or at the new one, never empty.
	if err = r.updateRef(ref, h, tip); err != nil && !errors.Is(err, ErrRefChanged) {
		err = fmt.Errorf("record %s: update ref: %w", ref, err)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// recCheckPath accepts clean relative slash paths whose parts git can store.
func recCheckPath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.ContainsAny(p, "\x00\\") {
		return fmt.Errorf("path %q: expected a clean relative slash path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return fmt.Errorf("path %q: %q is not allowed in a path", p, part)
		}
	}
	return nil
}

// BlobHashesAt returns the blob hash of every file in a commit's tree, keyed
// by slash path, without reading the blobs: comparing them with
// plumbing.ComputeHash of a file's content is the cheap way to check many
// files. A zero commit gives an empty map.
func (r *Repo) BlobHashesAt(commit plumbing.Hash) (map[string]plumbing.Hash, error) {
	tree, err := r.objects().TreeOf(commit)
	if err != nil {
		return nil, err
	}
	flat := map[string]objstore.Entry{}
	if err := r.objects().Trees(nil).Files(tree, "", flat); err != nil {
		return nil, err
	}
	out := make(map[string]plumbing.Hash, len(flat))
	for p, e := range flat {
		if e.Mode != filemode.Submodule {
			out[p] = e.Hash
		}
	}
	return out, nil
}

// FilesAt returns the content of every blob in a commit's tree (regular
// files, executables and symlink targets), keyed by slash path. Submodule
// entries have no blob and are left out. A zero commit gives an empty map.
func (r *Repo) FilesAt(commit plumbing.Hash) (map[string][]byte, error) {
	hashes, err := r.BlobHashesAt(commit)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(hashes))
	for p, h := range hashes {
		data, err := r.objects().Blob(h)
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
		}
		out[p] = data
	}
	return out, nil
}

// FileAt returns one regular file of a commit's tree. An absent path (or one
// naming a directory) gives an error wrapping fs.ErrNotExist; a symlink or
// submodule at path is an error too, since the caller wants file content.
func (r *Repo) FileAt(commit plumbing.Hash, p string) ([]byte, error) {
	if err := recCheckPath(p); err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
	}
	tree, err := r.objects().TreeOf(commit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	e, found, err := r.objects().Trees(nil).Lookup(tree, p)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
	}
	switch {
	case !found || e.Mode == filemode.Dir:
		return nil, fmt.Errorf("read %s at commit %s: %w", p, commit, fs.ErrNotExist)
	case e.Mode != filemode.Regular && e.Mode != filemode.Executable && e.Mode != filemode.Deprecated:
		return nil, fmt.Errorf("read %s at commit %s: it is a %s, expected a regular file", p, commit, modeKind(e.Mode))
	}
	data, err := r.objects().Blob(e.Hash)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
	}
	return data, nil
}

// LogRef returns up to max commits of ref, newest first, following first
// parents; max <= 0 means all of them. An absent ref gives no entries.
func (r *Repo) LogRef(ref string, max int) ([]RefEntry, error) {
	h, err := r.Ref(ref)
	if err != nil {
		return nil, err
	}
	var out []RefEntry
	for !h.IsZero() && (max <= 0 || len(out) < max) {
		c, err := r.objects().Commit(h)
		if err != nil {
			return nil, fmt.Errorf("log %s: read commit %s: %w", ref, h, err)
		}
		var parent plumbing.Hash
		if len(c.ParentHashes) > 0 {
			parent = c.ParentHashes[0]
		}
		changed, err := r.ChangedPaths(parent, c.TreeHash)
		if err != nil {
			return nil, fmt.Errorf("log %s: commit %s: %w", ref, h, err)
		}
		out = append(out, RefEntry{
			Hash:    h,
			Message: strings.TrimRight(c.Message, "\n"),
			When:    c.Committer.When,
			Changed: changed,
		})
		h = parent
	}
	return out, nil
}
