package gitguard

import (
	"errors"
	"fmt"
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Every object hgate reads to decide or to materialize is checked against
// its id: go-git inflates a loose object (or a packed one found through the
// pack index) without hashing it, so content swapped under a blob's id would
// be scored, restored or compared as if it were the committed file.

// CorruptObjectError is an object whose content does not hash to its id.
type CorruptObjectError struct {
	Type plumbing.ObjectType
	ID   plumbing.Hash
	Path string // the path it was read for, when known
}

func (e *CorruptObjectError) Error() string {
	where := ""
	if e.Path != "" {
		where = " for " + e.Path
	}
	return fmt.Sprintf("object store corrupt: %s %s%s does not match its hash; run git fsck", e.Type, e.ID, where)
}

// forPath names the path a corrupt object was read for; other errors are
// wrapped with what was being done.
func forPath(err error, what, p string) error {
	var ce *CorruptObjectError
	if errors.As(err, &ce) {
		if ce.Path == "" {
			c := *ce
			c.Path = p
			return &c
		}
		return ce
	}
	return fmt.Errorf("%s %s: %w", what, p, err)
}

// readObject reads object h of type t (AnyObject for either) and checks
// that its content hashes to h.
func (r *Repo) readObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	if typ, data, ok := r.readPacked(t, h); ok {
		return typ, data, nil // checked against h
	}
	o, err := r.repo.Storer.EncodedObject(t, h)
	if err != nil {
		return 0, nil, err
	}
	rd, err := o.Reader()
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(rd)
	rd.Close()
	if err != nil {
		return 0, nil, err
	}
	if objectHash(o.Type(), data) != h {
		return 0, nil, &CorruptObjectError{Type: o.Type(), ID: h}
	}
	return o.Type(), data, nil
}

func (r *Repo) readBlob(h plumbing.Hash) ([]byte, error) {
	_, data, err := r.readObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	return data, nil
}

// memObject wraps checked content for go-git's decoders.
func memObject(t plumbing.ObjectType, data []byte) *plumbing.MemoryObject {
	o := &plumbing.MemoryObject{}
	o.SetType(t)
	o.Write(data)
	return o
}

// readCommit reads and decodes commit h, checked against its id.
func (r *Repo) readCommit(h plumbing.Hash) (*object.Commit, error) {
	_, data, err := r.readObject(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	c := &object.Commit{}
	if err := c.Decode(memObject(plumbing.CommitObject, data)); err != nil {
		return nil, err
	}
	return c, nil
}

// readTree reads and decodes tree h, checked against its id.
func (r *Repo) readTree(h plumbing.Hash) (*object.Tree, error) {
	_, data, err := r.readObject(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	t := &object.Tree{}
	if err := t.Decode(memObject(plumbing.TreeObject, data)); err != nil {
		return nil, err
	}
	return t, nil
}
