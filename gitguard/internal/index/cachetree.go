package index

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/go-git/go-git/v5/plumbing"
)

// The index's cache-tree extension (TREE) records, per directory, the tree
// the last write-tree made of it and how many entries it covers. git commit
// builds the commit's tree from it: a node still valid whose object exists
// stands for its directory's entries without their being read (cache-tree.c,
// update_one). So the tree a commit gets is the cache tree's where it is
// valid and the entries' elsewhere, and forging the extension commits content
// the entries do not hold. The pre-commit hook computes that same tree; the
// nodes it trusts also spare it hashing the unchanged directories.

// CacheTree is one directory's node of the cache tree.
type CacheTree struct {
	count int // entries the tree covers; negative: invalid (recomputed)
	hash  plumbing.Hash
	subs  map[string]*CacheTree
}

// ParseCacheTree parses the TREE extension's data. Where git would drop the
// extension or die reading it, this is an error: the hook cannot tell what
// git would commit, so it does not vouch for the commit.
func ParseCacheTree(data []byte) (*CacheTree, error) {
	n, _, rest, err := readCTNode(data, 0)
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%d bytes after the root", len(rest))
	}
	if err != nil {
		return nil, fmt.Errorf("cache-tree extension: %w", err)
	}
	return n, nil
}

// readCTNode reads one node and its subtrees, written by git as
// "NAME\0COUNT SUBTREES\n" then the hash when COUNT is not negative.
func readCTNode(b []byte, depth int) (*CacheTree, string, []byte, error) {
	if depth > 4096 {
		return nil, "", nil, fmt.Errorf("nested too deep")
	}
	nul := bytes.IndexByte(b, 0)
	if nul < 0 {
		return nil, "", nil, fmt.Errorf("name not terminated")
	}
	name := string(b[:nul])
	b = b[nul+1:]
	nl := bytes.IndexByte(b, '\n')
	sp := bytes.IndexByte(b, ' ')
	if nl < 0 || sp < 0 || sp > nl {
		return nil, "", nil, fmt.Errorf("node %q: bad header", name)
	}
	count, err1 := strconv.Atoi(string(b[:sp]))
	nsub, err2 := strconv.Atoi(string(b[sp+1 : nl]))
	if err1 != nil || err2 != nil || nsub < 0 {
		return nil, "", nil, fmt.Errorf("node %q: bad header", name)
	}
	b = b[nl+1:]
	n := &CacheTree{count: count}
	if count >= 0 {
		if len(b) < len(n.hash) {
			return nil, "", nil, fmt.Errorf("node %q: hash truncated", name)
		}
		copy(n.hash[:], b)
		b = b[len(n.hash):]
	}
	if nsub > 0 {
		n.subs = make(map[string]*CacheTree, min(nsub, 64))
	}
	for range nsub {
		sub, subName, rest, err := readCTNode(b, depth+1)
		if err != nil {
			return nil, "", nil, err
		}
		if _, dup := n.subs[subName]; dup {
			return nil, "", nil, fmt.Errorf("node %q: subtree %q twice", name, subName)
		}
		n.subs[subName] = sub
		b = rest
	}
	return n, name, b, nil
}

// cached is the hash git would use for the directory of entries[lo:hi]
// without reading them: the node's when it is valid, its object exists, and
// it covers exactly those entries (git would skip as many entries as the
// node claims, so another count is an error).
func (b *treeBuilder) cached(n *CacheTree, prefix string, lo, hi int) (plumbing.Hash, bool, error) {
	if n == nil || n.count < 0 {
		return plumbing.ZeroHash, false, nil
	}
	if n.count != hi-lo {
		where := "the root"
		if prefix != "" {
			where = prefix
		}
		return plumbing.ZeroHash, false, fmt.Errorf("cache-tree extension: its node for %s covers %d entries, the index holds %d there", where, n.count, hi-lo)
	}
	ok, err := b.has(n.hash)
	if err != nil || !ok {
		return plumbing.ZeroHash, false, err
	}
	b.trusted++
	return n.hash, true, nil
}
