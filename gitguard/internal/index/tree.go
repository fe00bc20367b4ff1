package index

import (
	"crypto/sha1"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/objstore"
)

// HashTrees hashes the index's merged entries into trees in memory, as
// git write-tree would without a cache tree, and returns the root hash;
// unmerged and intent-to-add entries are left out. Entries must be sorted as
// the index sorts them.
func HashTrees(entries []Entry) (plumbing.Hash, map[plumbing.Hash][]objstore.Entry, error) {
	b := &treeBuilder{entries: entries, mem: map[plumbing.Hash][]objstore.Entry{}}
	root, err := b.build("", 0, len(entries), nil)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return root, b.mem, nil
}

// HashTreesLazy is HashTrees keeping where each tree's entries are rather than
// the entries: find builds a tree's entries (and its subtrees') when first asked,
// so a tree diff that stops at equal hashes never builds them. find is safe for
// concurrent use; entries must not change while it is used.
func HashTreesLazy(entries []Entry) (plumbing.Hash, func(plumbing.Hash) ([]objstore.Entry, bool), error) {
	b := &treeBuilder{entries: entries, spans: map[plumbing.Hash]treeSpan{}}
	root, err := b.build("", 0, len(entries), nil)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	var mu sync.Mutex
	mem := map[plumbing.Hash][]objstore.Entry{}
	find := func(h plumbing.Hash) ([]objstore.Entry, bool) {
		mu.Lock()
		defer mu.Unlock()
		if es, ok := mem[h]; ok {
			return es, true
		}
		sp, ok := b.spans[h]
		if !ok {
			return nil, false
		}
		full := &treeBuilder{entries: entries, mem: mem, span: sp.hi - sp.lo}
		if _, err := full.build(sp.prefix, sp.lo, sp.hi, nil); err != nil {
			return nil, false // built without error above, from the same entries
		}
		es, ok := mem[h]
		return es, ok
	}
	return root, find, nil
}

// treeSpan is where a tree's entries are: entries[lo:hi], all under prefix.
type treeSpan struct {
	prefix string
	lo, hi int
}

type treeBuilder struct {
	entries []Entry
	mem     map[plumbing.Hash][]objstore.Entry
	levels  [][]objstore.Entry         // scratch entries per depth, reused across trees
	arena   []objstore.Entry           // backs mem's trees: one allocation, not one per tree
	spans   map[plumbing.Hash]treeSpan // HashTreesLazy: where each tree is, instead of mem
	span    int                        // entries the arena is sized for: 0 = all
	buf     []byte                     // scratch tree object

	// With a cache tree: whether an object exists, and how many nodes stood
	// in for their entries.
	has     func(plumbing.Hash) (bool, error)
	trusted int
}

// build hashes entries[lo:hi], which all start with prefix; n is the cache
// tree's node for prefix, or nil, and its valid subtrees stand in for their
// entries.
func (b *treeBuilder) build(prefix string, lo, hi int, n *CacheTree) (plumbing.Hash, error) {
	depth := strings.Count(prefix, "/")
	for len(b.levels) <= depth {
		b.levels = append(b.levels, nil)
	}
	es := b.levels[depth][:0]
	for i := lo; i < hi; {
		e := &b.entries[i]
		rest := e.Path[len(prefix):]
		if slash := strings.IndexByte(rest, '/'); slash >= 0 {
			dir := rest[:slash]
			sub := e.Path[:len(prefix)+slash+1]
			// Sorted entries: sub's run ends at the first without its prefix,
			// found by halving, as a trusted node below spares reading the run.
			j := i + 1 + sort.Search(hi-i-1, func(k int) bool { return !strings.HasPrefix(b.entries[i+1+k].Path, sub) })
			b.levels[depth] = es // keep the grown buffer for the next tree at this depth
			var subNode *CacheTree
			if n != nil {
				subNode = n.subs[dir]
			}
			h, fromCache, err := b.cached(subNode, sub, i, j)
			if err == nil && !fromCache {
				h, err = b.build(sub, i, j, subNode)
			}
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if len(es) > 0 && es[len(es)-1].Name == dir {
				return plumbing.ZeroHash, corrupt("%q is both a file and a directory", prefix+dir)
			}
			// git keeps an empty tree a valid node names; one it computed is
			// empty only for intent-to-add entries, and left out.
			if h != objstore.EmptyTree || b.kept(h) || fromCache {
				es = append(es, objstore.Entry{Name: dir, Mode: filemode.Dir, Hash: h})
			}
			i = j
			continue
		}
		i++
		if e.Stage != 0 || e.IntentToAdd {
			continue
		}
		es = append(es, objstore.Entry{Name: rest, Mode: e.FileMode(), Hash: e.Hash})
	}
	b.levels[depth] = es
	if len(es) == 0 {
		return objstore.EmptyTree, nil
	}
	h := b.hash(es)
	if b.spans != nil {
		b.spans[h] = treeSpan{prefix, lo, hi}
	} else {
		b.mem[h] = b.keep(es)
	}
	return h, nil
}

// kept reports whether the builder computed tree h.
func (b *treeBuilder) kept(h plumbing.Hash) bool {
	if b.spans != nil {
		_, ok := b.spans[h]
		return ok
	}
	return b.mem[h] != nil
}

// keep copies a tree's entries into the arena, grown by the entries left to
// place: each index entry is in one tree, plus one entry per folder.
func (b *treeBuilder) keep(es []objstore.Entry) []objstore.Entry {
	if cap(b.arena)-len(b.arena) < len(es) {
		n := b.span
		if n == 0 {
			n = len(b.entries)
		}
		b.arena = make([]objstore.Entry, 0, max(len(es), n+n/8))
	}
	n := len(b.arena)
	b.arena = append(b.arena, es...)
	return b.arena[n:len(b.arena):len(b.arena)]
}

// hash is a tree's id without allocating: header and entries go into one
// reused buffer.
func (b *treeBuilder) hash(es []objstore.Entry) plumbing.Hash {
	n := 0
	for _, e := range es {
		n += len(objstore.ModeText(e.Mode)) + 1 + len(e.Name) + 1 + 20
	}
	buf := append(b.buf[:0], "tree "...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, 0)
	buf = objstore.AppendTree(buf, es)
	b.buf = buf
	return plumbing.Hash(sha1.Sum(buf))
}

// CommitTree is the tree git commit makes of the index: the cache tree's
// valid nodes (see cachetree.go) where their objects exist, the entries
// hashed elsewhere. trusted counts the nodes used; mem holds the trees
// computed.
func CommitTree(entries []Entry, cache *CacheTree, has func(plumbing.Hash) (bool, error)) (root plumbing.Hash, mem map[plumbing.Hash][]objstore.Entry, trusted int, err error) {
	b := &treeBuilder{entries: entries, mem: map[plumbing.Hash][]objstore.Entry{}, has: has}
	root, ok, err := b.cached(cache, "", 0, len(entries))
	if err == nil && !ok {
		root, err = b.build("", 0, len(entries), cache)
	}
	if err != nil {
		return plumbing.ZeroHash, nil, 0, err
	}
	return root, b.mem, b.trusted, nil
}
