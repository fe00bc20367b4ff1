package gitguard

import "github.com/hgate/hgate/gitguard/internal/objstore"

// CorruptObjectError is an object whose content does not hash to its id:
// every object hgate reads to decide or to materialize is checked.
type CorruptObjectError = objstore.CorruptObjectError

// Commit is a decoded commit: tree, parents, author, committer, message
// (package objstore decodes it, without go-git's plumbing/object).
type Commit = objstore.Commit

// objects is the repository's object database (see package objstore).
func (r *Repo) objects() objstore.Store { return objstore.New(r.commonDir) }
