package gitguard

import (
	"crypto/sha1"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/objstore"
)

// tEntry is one tree entry.
type tEntry struct {
	name string
	mode filemode.FileMode
	hash plumbing.Hash
}

func (e tEntry) isTree() bool { return e.mode == filemode.Dir }

// sortKey orders entries as git does: a tree sorts as if its name ended in "/".
func (e tEntry) sortKey() string {
	if e.isTree() {
		return e.name + "/"
	}
	return e.name
}

// change is one file path whose entry differs between two trees; a zero
// mode on a side means the path is absent there.
type change struct {
	path     string
	from, to tEntry
}

// treeReader reads trees from the object database, or from trees computed
// in memory (the index hashed into trees) without storing them.
type treeReader struct {
	r   *Repo
	mem map[plumbing.Hash][]tEntry
}

func (r *Repo) newTreeReader(mem map[plumbing.Hash][]tEntry) *treeReader {
	return &treeReader{r: r, mem: mem}
}

func (t *treeReader) entries(h plumbing.Hash) ([]tEntry, error) {
	if es, ok := t.mem[h]; ok {
		return es, nil
	}
	if h == objstore.EmptyTree {
		return nil, nil
	}
	tr, err := t.r.objects().Tree(h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	es := make([]tEntry, len(tr.Entries))
	for i, e := range tr.Entries {
		es[i] = tEntry{name: e.Name, mode: e.Mode, hash: e.Hash}
		if err := checkTreeName(e.Name); err != nil {
			return nil, fmt.Errorf("tree %s: %w", h, err)
		}
	}
	return es, nil
}

// checkTreeName refuses names that would escape a directory or write into .git.
func checkTreeName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || strings.EqualFold(name, ".git") {
		return fmt.Errorf("bad entry name %q", name)
	}
	return nil
}

// diff lists the file paths that differ between trees a and b, descending
// only into subtrees whose hashes differ.
func (t *treeReader) diff(a, b plumbing.Hash) ([]change, error) {
	var out []change
	err := t.diffInto(&out, "", a, b)
	return out, err
}

func (t *treeReader) diffInto(out *[]change, prefix string, a, b plumbing.Hash) error {
	if a == b {
		return nil
	}
	ea, err := t.entries(a)
	if err != nil {
		return err
	}
	eb, err := t.entries(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var x, y *tEntry
		switch {
		case i == len(ea):
			y = &eb[j]
			j++
		case j == len(eb):
			x = &ea[i]
			i++
		default:
			c := strings.Compare(ea[i].sortKey(), eb[j].sortKey())
			switch {
			case c < 0:
				x = &ea[i]
				i++
			case c > 0:
				y = &eb[j]
				j++
			default:
				x, y = &ea[i], &eb[j]
				i++
				j++
			}
		}
		switch {
		case x != nil && y != nil:
			if x.isTree() {
				if err := t.diffInto(out, prefix+x.name+"/", x.hash, y.hash); err != nil {
					return err
				}
			} else if x.hash != y.hash || x.mode != y.mode {
				*out = append(*out, change{path: prefix + x.name, from: *x, to: *y})
			}
		case x != nil:
			if err := t.oneSide(out, prefix, *x, true); err != nil {
				return err
			}
		default:
			if err := t.oneSide(out, prefix, *y, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// oneSide lists every file under an entry present on one side only.
func (t *treeReader) oneSide(out *[]change, prefix string, e tEntry, from bool) error {
	if !e.isTree() {
		c := change{path: prefix + e.name}
		if from {
			c.from = e
		} else {
			c.to = e
		}
		*out = append(*out, c)
		return nil
	}
	es, err := t.entries(e.hash)
	if err != nil {
		return err
	}
	for _, sub := range es {
		if err := t.oneSide(out, prefix+e.name+"/", sub, from); err != nil {
			return err
		}
	}
	return nil
}

// lookup finds the entry at path in tree h.
func (t *treeReader) lookup(h plumbing.Hash, path string) (tEntry, bool, error) {
	for {
		es, err := t.entries(h)
		if err != nil {
			return tEntry{}, false, err
		}
		name, rest, more := strings.Cut(path, "/")
		var found *tEntry
		for i := range es {
			if es[i].name == name {
				found = &es[i]
				break
			}
		}
		if found == nil {
			return tEntry{}, false, nil
		}
		if !more {
			return *found, true, nil
		}
		if !found.isTree() {
			return tEntry{}, false, nil
		}
		h, path = found.hash, rest
	}
}

// appendTree appends a tree object's content (without its header) for
// entries in git's order: the one encoder of trees, stored or only hashed.
func appendTree(buf []byte, es []tEntry) []byte {
	for _, e := range es {
		buf = append(buf, modeText(e.mode)...)
		buf = append(buf, ' ')
		buf = append(buf, e.name...)
		buf = append(buf, 0)
		buf = append(buf, e.hash[:]...)
	}
	return buf
}

// hashIndexTrees hashes the index's merged entries into trees in memory, as
// git write-tree would, and returns the root hash; unmerged and intent-to-add
// entries are left out. Entries must be sorted as the index sorts them.
func hashIndexTrees(entries []indexEntry) (plumbing.Hash, map[plumbing.Hash][]tEntry, error) {
	mem := map[plumbing.Hash][]tEntry{}
	b := &treeBuilder{entries: entries, mem: mem}
	root, err := b.build("", 0, len(entries))
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	return root, mem, nil
}

type treeBuilder struct {
	entries []indexEntry
	mem     map[plumbing.Hash][]tEntry
	levels  [][]tEntry // scratch entries per depth, reused across trees
	buf     []byte     // scratch tree object
}

// build hashes entries[lo:hi], which all start with prefix.
func (b *treeBuilder) build(prefix string, lo, hi int) (plumbing.Hash, error) {
	depth := strings.Count(prefix, "/")
	for len(b.levels) <= depth {
		b.levels = append(b.levels, nil)
	}
	es := b.levels[depth][:0]
	for i := lo; i < hi; {
		e := &b.entries[i]
		rest := e.path[len(prefix):]
		if slash := strings.IndexByte(rest, '/'); slash >= 0 {
			dir := rest[:slash]
			sub := e.path[:len(prefix)+slash+1]
			j := i + 1
			for j < hi && strings.HasPrefix(b.entries[j].path, sub) {
				j++
			}
			b.levels[depth] = es // keep the grown buffer for the next tree at this depth
			h, err := b.build(sub, i, j)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if len(es) > 0 && es[len(es)-1].name == dir {
				return plumbing.ZeroHash, corrupt("%q is both a file and a directory", prefix+dir)
			}
			if h != objstore.EmptyTree || b.mem[h] != nil {
				es = append(es, tEntry{name: dir, mode: filemode.Dir, hash: h})
			}
			i = j
			continue
		}
		i++
		if e.stage != 0 || e.intentToAdd {
			continue
		}
		es = append(es, tEntry{name: rest, mode: e.fileMode(), hash: e.hash})
	}
	b.levels[depth] = es
	if len(es) == 0 {
		return objstore.EmptyTree, nil
	}
	h := b.hash(es)
	b.mem[h] = slices.Clone(es)
	return h, nil
}

// hash is a tree's id without allocating: header and entries go into one
// reused buffer.
func (b *treeBuilder) hash(es []tEntry) plumbing.Hash {
	n := 0
	for _, e := range es {
		n += len(modeText(e.mode)) + 1 + len(e.name) + 1 + 20
	}
	buf := append(b.buf[:0], "tree "...)
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, 0)
	buf = appendTree(buf, es)
	b.buf = buf
	return plumbing.Hash(sha1.Sum(buf))
}

// modeText is a mode as a tree object spells it: octal, no leading zero.
// The modes an index holds are spelled from constants, not formatted.
func modeText(m filemode.FileMode) string {
	switch m {
	case filemode.Regular:
		return "100644"
	case filemode.Executable:
		return "100755"
	case filemode.Symlink:
		return "120000"
	case filemode.Submodule:
		return "160000"
	case filemode.Dir:
		return "40000"
	}
	return strconv.FormatUint(uint64(m), 8)
}
