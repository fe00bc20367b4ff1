package gitguard

import (
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard/internal/records"
)

// RecordAuthorName and RecordAuthorEmail sign every record commit (as
// author and committer); the time is the time of the write.
const (
	RecordAuthorName  = records.AuthorName
	RecordAuthorEmail = records.AuthorEmail
)

// RefEntry is one commit of a record ref, newest first in LogRef.
type RefEntry = records.Entry

// recBeforeSetRef, when set (by tests), runs between building a record
// commit and moving the ref: the window where another writer can win.
var recBeforeSetRef func(ref string)

// recRetryFor, when set (by tests), bounds a record write's retries instead of
// the package's 10 s: stretched by the tests' time scale on a loaded machine.
var recRetryFor time.Duration

func (r *Repo) records() records.Store {
	return records.Store{Objects: r.objects(), Refs: r.refStore(), BeforeUpdate: recBeforeSetRef, RetryFor: recRetryFor}
}

// CommitFiles records files as a new commit on ref, on top of the ref's
// current tip; a nil value deletes a path. Concurrent writers each land (see
// package records).
func (r *Repo) CommitFiles(ref string, files map[string][]byte, message string) (plumbing.Hash, error) {
	return r.records().Commit(ref, files, message)
}

// LogRef returns up to max commits of ref, newest first, following first
// parents; max <= 0 means all of them. An absent ref gives no entries.
func (r *Repo) LogRef(ref string, max int) ([]RefEntry, error) {
	return r.records().Log(ref, max)
}

// BlobHashesAt returns the blob hash of every file in a commit's tree, keyed
// by slash path, without reading the blobs: comparing them with
// plumbing.ComputeHash of a file's content is the cheap way to check many
// files. A zero commit gives an empty map.
func (r *Repo) BlobHashesAt(commit plumbing.Hash) (map[string]plumbing.Hash, error) {
	return r.objects().BlobHashes(commit)
}

// FilesAt returns the content of every blob in a commit's tree (regular
// files, executables and symlink targets), keyed by slash path. Submodule
// entries have no blob and are left out. A zero commit gives an empty map.
func (r *Repo) FilesAt(commit plumbing.Hash) (map[string][]byte, error) {
	return r.objects().Files(commit)
}

// FileAt returns one regular file of a commit's tree. An absent path (or one
// naming a directory) gives an error wrapping fs.ErrNotExist; a symlink or
// submodule at path is an error too, since the caller wants file content.
func (r *Repo) FileAt(commit plumbing.Hash, p string) ([]byte, error) {
	return r.objects().File(commit, p)
}
