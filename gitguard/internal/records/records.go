// Package records keeps small sets of files as commits on hgate's own refs
// (refs/hgate/ledger), built blob → tree → commit in the object store and
// published with a compare-and-set of the ref (package refs), so two writers
// never lose each other's commit and a kill leaves the ref old or new.
package records

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/gitguard/internal/refs"
)

// AuthorName and AuthorEmail sign every record commit (as author and
// committer); the time is the time of the write.
const (
	AuthorName  = "hgate"
	AuthorEmail = "hgate@localhost"
)

// retryFor bounds how long Commit keeps rebuilding its commit after losing the
// race for the ref to another writer. A time, not a count: on a busy machine a
// writer holding the ref's lock can be descheduled for far longer than a few
// quick retries last (ten attempts gave up under load). It is the age at which a
// ref lock counts as left by a killed process.
const retryFor = 10 * time.Second

// Store writes and reads record refs.
type Store struct {
	Objects objstore.Store
	Refs    *refs.Store
	// BeforeUpdate, when set (by tests), runs between building a record commit
	// and moving the ref: the window where another writer can win.
	BeforeUpdate func(ref string)
	// RetryFor, when set (by tests on a loaded machine), replaces retryFor.
	RetryFor time.Duration
}

// Entry is one commit of a record ref, newest first in Log.
type Entry struct {
	Hash    plumbing.Hash
	Message string    // without the trailing newline
	When    time.Time // committer time
	Changed []string  // slash paths that differ from the first parent, sorted
}

// Commit records files as a new commit on ref, on top of the ref's current
// tip (a root commit when the ref does not exist). The new tree is the tip's
// tree with files applied: a non-nil value writes that path as a regular
// file, a nil value deletes it (deleting an absent path is a no-op). Paths
// are slash paths relative to the tree root; "receipts/a.json" makes a
// subtree. The commit is made even when no file changes, so an event can be
// recorded on its own.
//
// The ref moves only if it still holds the tip read at the start; when
// another writer got there first, the whole commit is rebuilt on the new tip
// (up to a few times), so concurrent writers each land and none is lost.
func (s Store) Commit(ref string, files map[string][]byte, message string) (plumbing.Hash, error) {
	if !strings.HasPrefix(ref, "refs/") || plumbing.ReferenceName(ref).Validate() != nil {
		return plumbing.ZeroHash, fmt.Errorf("record %s: not a valid ref name under refs/", ref)
	}
	for p := range files {
		if err := objstore.CheckPath(p); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("record %s: %w", ref, err)
		}
	}
	// Blobs do not depend on the tip: store them once.
	blobs := make(map[string]plumbing.Hash, len(files))
	for p, data := range files {
		if data == nil {
			continue
		}
		h, err := s.Objects.Write(plumbing.BlobObject, data)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("record %s: store %s: %w", ref, p, err)
		}
		blobs[p] = h
	}
	start, limit := time.Now(), retryFor
	if s.RetryFor > 0 {
		limit = s.RetryFor
	}
	for attempt := 1; ; attempt++ {
		h, err := s.commitOnce(ref, files, blobs, message)
		if !errors.Is(err, refs.ErrChanged) {
			return h, err
		}
		if time.Since(start) > limit {
			return plumbing.ZeroHash, fmt.Errorf("record %s: gave up after %d attempts in %s: %w", ref, attempt, limit, err)
		}
		// Back off a little, with jitter, so two writers stop colliding.
		time.Sleep(min(time.Duration(attempt), 20)*time.Millisecond + rand.N(2*time.Millisecond))
	}
}

func (s Store) commitOnce(ref string, files map[string][]byte, blobs map[string]plumbing.Hash, message string) (plumbing.Hash, error) {
	tip, err := s.Refs.Hash(ref)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	trees := s.Objects.Trees(nil)
	flat := map[string]objstore.Entry{}
	var parents []plumbing.Hash
	if !tip.IsZero() {
		tree, err := s.Objects.TreeOf(tip)
		if err == nil {
			err = trees.Files(tree, "", flat)
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
	tree, err := trees.Apply(objstore.EmptyTree, root)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("record %s: %w", ref, err)
	}
	if !strings.HasSuffix(message, "\n") {
		message += "\n"
	}
	sig := objstore.Signature{Name: AuthorName, Email: AuthorEmail, When: time.Now()}
	h, err := s.Objects.WriteCommit(tree, message, sig, parents...)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("record %s: %w", ref, err)
	}
	if s.BeforeUpdate != nil {
		s.BeforeUpdate(ref)
	}
	err = s.Refs.Update(ref, refs.HashValue(h), refs.HashValue(tip))
	if err != nil && !errors.Is(err, refs.ErrChanged) {
		err = fmt.Errorf("record %s: update ref: %w", ref, err)
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return h, nil
}

// Log returns up to max commits of ref, newest first, following first
// parents; max <= 0 means all of them. An absent ref gives no entries.
func (s Store) Log(ref string, max int) ([]Entry, error) {
	h, err := s.Refs.Hash(ref)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for !h.IsZero() && (max <= 0 || len(out) < max) {
		c, err := s.Objects.Commit(h)
		if err != nil {
			return nil, fmt.Errorf("log %s: read commit %s: %w", ref, h, err)
		}
		var parent plumbing.Hash
		if len(c.ParentHashes) > 0 {
			parent = c.ParentHashes[0]
		}
		changed, err := s.Objects.ChangedPaths(parent, c.TreeHash)
		if err != nil {
			return nil, fmt.Errorf("log %s: commit %s: %w", ref, h, err)
		}
		out = append(out, Entry{
			Hash:    h,
			Message: strings.TrimRight(c.Message, "\n"),
			When:    c.Committer.When,
			Changed: changed,
		})
		h = parent
	}
	return out, nil
}
