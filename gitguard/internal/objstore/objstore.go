// Package objstore reads and writes git objects for hgate, and checks every
// object it reads against its id, so content swapped under a blob's id is
// never scored, restored or compared as if it were the committed file. It
// reads loose objects (zlib, "type size\0" header) and packed ones (through
// the version-2 pack index, undoing offset and hash deltas), writes loose
// objects as go-git did (a tmp_obj_* file in objects/pack renamed into
// place), and decodes and encodes commits and trees itself (commit.go,
// tree.go). It links none of go-git's storage, whose package initialisation
// every hgate start would pay.
package objstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// EmptyTree is the hash of the tree with no entries, 4b825dc642cb6eb9a060e54bf8d69288fbee4904,
// as bytes: plumbing.NewHash would decode it at every start of every command.
var EmptyTree = plumbing.Hash{0x4b, 0x82, 0x5d, 0xc6, 0x42, 0xcb, 0x6e, 0xb9, 0xa0, 0x60, 0xe5, 0x4b, 0xf8, 0xd6, 0x92, 0x88, 0xfb, 0xee, 0x49, 0x04}

// Store is the object database of one repository.
type Store struct {
	objects string // the objects folder of the shared git directory
}

// New returns the store of the repository whose shared git directory is
// commonDir.
func New(commonDir string) Store {
	return Store{objects: filepath.Join(commonDir, "objects")}
}

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

// ForPath names the path a corrupt object was read for; other errors are
// wrapped with what was being done.
func ForPath(err error, what, p string) error {
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

// Read reads object h of type t (AnyObject for either) and checks that its
// content hashes to h. A missing object is an error wrapping
// plumbing.ErrObjectNotFound.
func (s Store) Read(t plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, []byte, error) {
	return s.read(t, h, 0)
}

// read is Read at a depth of hash deltas, which it bounds.
func (s Store) read(t plumbing.ObjectType, h plumbing.Hash, depth int) (plumbing.ObjectType, []byte, error) {
	typ, data, found, err := s.readLoose(h)
	if err == nil && !found {
		typ, data, found, err = s.readPacked(h, depth)
	}
	switch {
	case err != nil:
		return 0, nil, err
	case !found:
		return 0, nil, fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
	case plumbing.ComputeHash(typ, data) != h:
		return 0, nil, &CorruptObjectError{Type: typ, ID: h}
	case t != plumbing.AnyObject && typ != t:
		return 0, nil, fmt.Errorf("object %s is a %s, expected a %s: %w", h, typ, t, plumbing.ErrObjectNotFound)
	}
	return typ, data, nil
}

// Blob reads blob h, checked against its id.
func (s Store) Blob(h plumbing.Hash) ([]byte, error) {
	_, data, err := s.Read(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s: %w", h, err)
	}
	return data, nil
}

// Commit reads and decodes commit h, checked against its id.
func (s Store) Commit(h plumbing.Hash) (*Commit, error) {
	_, data, err := s.Read(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	return DecodeCommit(data)
}

// Tree reads and decodes tree h, checked against its id: its entries in
// git's order.
func (s Store) Tree(h plumbing.Hash) ([]Entry, error) {
	_, data, err := s.Read(plumbing.TreeObject, h)
	if err != nil {
		return nil, err
	}
	return DecodeTree(data)
}

// TreeOf returns the tree of a commit, or h itself when it names a tree; zero
// stands for no commit and gives the empty tree. This is the one way from a
// commit to its tree.
func (s Store) TreeOf(h plumbing.Hash) (plumbing.Hash, error) {
	if h.IsZero() {
		return EmptyTree, nil
	}
	t, data, err := s.Read(plumbing.AnyObject, h)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", h, err)
	}
	switch t {
	case plumbing.TreeObject:
		return h, nil
	case plumbing.CommitObject:
		c, err := DecodeCommit(data)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read commit %s: %w", h, err)
		}
		return c.TreeHash, nil
	}
	return plumbing.ZeroHash, fmt.Errorf("object %s is a %s, expected a commit or tree", h, t)
}

// Parents returns the parents of commit h.
func (s Store) Parents(h plumbing.Hash) ([]plumbing.Hash, error) {
	c, err := s.Commit(h)
	if err != nil {
		return nil, err
	}
	return c.ParentHashes, nil
}

// IsAncestor reports whether anc is reachable from c through parents.
func (s Store) IsAncestor(anc, c plumbing.Hash) (bool, error) {
	if anc == c {
		return true, nil
	}
	seen := map[plumbing.Hash]bool{c: true}
	queue := []plumbing.Hash{c}
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		parents, err := s.Parents(h)
		if err != nil {
			if errors.Is(err, plumbing.ErrObjectNotFound) && h != c {
				// A shallow clone ends here.
				continue
			}
			return false, fmt.Errorf("read commit %s: %w", h, err)
		}
		for _, p := range parents {
			if p == anc {
				return true, nil
			}
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false, nil
}

// Write stores an object (when the store lacks it) and returns its id.
func (s Store) Write(t plumbing.ObjectType, data []byte) (plumbing.Hash, error) {
	h := plumbing.ComputeHash(t, data)
	c := s.Checker()
	has, err := c.Has(h)
	c.Close()
	if err == nil && has {
		return h, nil
	}
	if err := s.writeLoose(t, data, h); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("store %s object: %w", t, err)
	}
	return h, nil
}

// WriteCommit stores a commit whose committer is its author (now, when the
// author has no time). It is the one commit encoder: candidates, attempts
// and records.
func (s Store) WriteCommit(tree plumbing.Hash, message string, author Signature, parents ...plumbing.Hash) (plumbing.Hash, error) {
	if author.When.IsZero() {
		author.When = time.Now()
	}
	if tree == EmptyTree {
		// Trees are built without storing the empty one; a commit needs it in the store.
		if _, err := s.Write(plumbing.TreeObject, nil); err != nil {
			return plumbing.ZeroHash, err
		}
	}
	c := &Commit{Author: author, Committer: author, Message: message, TreeHash: tree, ParentHashes: parents}
	h, err := s.Write(plumbing.CommitObject, c.Encode())
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("store commit: %w", err)
	}
	return h, nil
}

// Checker answers whether objects are in the repository's own object
// database, loose or packed, as git's has_object_file does, with the pack
// indexes opened once. Close releases them.
type Checker struct {
	objects string
	idxs    []*packIdx
	err     error
}

// Checker opens the pack indexes for Has.
func (s Store) Checker() *Checker {
	c := &Checker{objects: s.objects}
	c.idxs, c.err = openIdxs(s.objects)
	return c
}

// Has reports whether object h is there. When it is not, and
// objects/info/alternates names other databases, which hgate does not read,
// the answer is an error rather than a guess.
func (c *Checker) Has(h plumbing.Hash) (bool, error) {
	if c.err != nil {
		return false, c.err
	}
	for _, x := range c.idxs {
		_, _, found, err := x.position(h)
		if err != nil {
			return false, err
		}
		if found {
			return true, nil
		}
	}
	hex := h.String()
	if _, err := os.Lstat(filepath.Join(c.objects, hex[:2], hex[2:])); err == nil {
		return true, nil
	}
	if _, err := os.Lstat(filepath.Join(c.objects, "info", "alternates")); err == nil {
		return false, fmt.Errorf("object %s is not in %s and objects/info/alternates names other object databases, which hgate does not read", h, c.objects)
	}
	return false, nil
}

// Close closes the pack indexes.
func (c *Checker) Close() {
	for _, x := range c.idxs {
		x.f.Close()
	}
}

// Size returns the size of object h's content without reading it all (for a bound to
// be checked first); it is not checked against h, which reading it later does.
func (s Store) Size(h plumbing.Hash) (int64, error) {
	size, found, err := s.looseSize(h)
	if err == nil && !found {
		size, found, err = s.packedSize(h)
	}
	if err == nil && !found {
		err = fmt.Errorf("object %s: %w", h, plumbing.ErrObjectNotFound)
	}
	return size, err
}
