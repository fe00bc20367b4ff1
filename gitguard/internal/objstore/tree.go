package objstore

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Entry is one tree entry.
type Entry struct {
	Name string
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// IsTree reports whether the entry is a subtree.
func (e Entry) IsTree() bool { return e.Mode == filemode.Dir }

// SortKey orders entries as git does: a tree sorts as if its name ended in "/".
func (e Entry) SortKey() string {
	if e.IsTree() {
		return e.Name + "/"
	}
	return e.Name
}

// Change is one file path whose entry differs between two trees; a zero
// mode on a side means the path is absent there.
type Change struct {
	Path     string
	From, To Entry
}

// Trees reads trees from the object database, or from trees computed in
// memory (the index hashed into trees) without storing them, and stores the
// trees an Edit makes.
type Trees struct {
	s    Store
	mem  map[plumbing.Hash][]Entry
	find func(plumbing.Hash) ([]Entry, bool) // TreesFunc's trees, asked after mem
}

// Trees reads the store's trees; mem, when not nil, holds trees that are
// only hashed, by id.
func (s Store) Trees(mem map[plumbing.Hash][]Entry) *Trees {
	return &Trees{s: s, mem: mem}
}

// TreesFunc is Trees over trees computed in memory only when asked for: find
// returns tree h's entries, or false for a tree it did not compute.
func (s Store) TreesFunc(find func(h plumbing.Hash) ([]Entry, bool)) *Trees {
	return &Trees{s: s, find: find}
}

// Entries returns the entries of tree h in git's order. A name that could
// escape a directory or write into .git is an error.
func (t *Trees) Entries(h plumbing.Hash) ([]Entry, error) {
	if es, ok := t.mem[h]; ok {
		return es, nil
	}
	if t.find != nil {
		if es, ok := t.find(h); ok {
			return es, nil
		}
	}
	if h == EmptyTree {
		return nil, nil
	}
	es, err := t.s.Tree(h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	for _, e := range es {
		if err := CheckName(e.Name); err != nil {
			return nil, fmt.Errorf("tree %s: %w", h, err)
		}
	}
	return es, nil
}

// CheckName refuses names that would escape a directory or write into .git.
func CheckName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || strings.EqualFold(name, ".git") {
		return fmt.Errorf("bad entry name %q", name)
	}
	return nil
}

// Diff lists the file paths that differ between trees a and b, descending
// only into subtrees whose hashes differ: the one tree diff.
func (t *Trees) Diff(a, b plumbing.Hash) ([]Change, error) {
	var out []Change
	err := t.diffInto(&out, "", a, b)
	return out, err
}

func (t *Trees) diffInto(out *[]Change, prefix string, a, b plumbing.Hash) error {
	if a == b {
		return nil
	}
	ea, err := t.Entries(a)
	if err != nil {
		return err
	}
	eb, err := t.Entries(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var x, y *Entry
		switch {
		case i == len(ea):
			y = &eb[j]
			j++
		case j == len(eb):
			x = &ea[i]
			i++
		default:
			c := strings.Compare(ea[i].SortKey(), eb[j].SortKey())
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
			if x.IsTree() {
				if err := t.diffInto(out, prefix+x.Name+"/", x.Hash, y.Hash); err != nil {
					return err
				}
			} else if x.Hash != y.Hash || x.Mode != y.Mode {
				*out = append(*out, Change{Path: prefix + x.Name, From: *x, To: *y})
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
func (t *Trees) oneSide(out *[]Change, prefix string, e Entry, from bool) error {
	if !e.IsTree() {
		c := Change{Path: prefix + e.Name}
		if from {
			c.From = e
		} else {
			c.To = e
		}
		*out = append(*out, c)
		return nil
	}
	es, err := t.Entries(e.Hash)
	if err != nil {
		return err
	}
	for _, sub := range es {
		if err := t.oneSide(out, prefix+e.Name+"/", sub, from); err != nil {
			return err
		}
	}
	return nil
}

// Lookup finds the entry at slash path in tree h; a path through a file is
// not found.
func (t *Trees) Lookup(h plumbing.Hash, path string) (Entry, bool, error) {
	for {
		es, err := t.Entries(h)
		if err != nil {
			return Entry{}, false, err
		}
		name, rest, more := strings.Cut(path, "/")
		var found *Entry
		for i := range es {
			if es[i].Name == name {
				found = &es[i]
				break
			}
		}
		if found == nil {
			return Entry{}, false, nil
		}
		if !more {
			return *found, true, nil
		}
		if !found.IsTree() {
			return Entry{}, false, nil
		}
		h, path = found.Hash, rest
	}
}

// AppendTree appends a tree object's content (without its header) for
// entries in git's order: the one encoder of trees, stored or only hashed.
func AppendTree(buf []byte, es []Entry) []byte {
	for _, e := range es {
		buf = append(buf, ModeText(e.Mode)...)
		buf = append(buf, ' ')
		buf = append(buf, e.Name...)
		buf = append(buf, 0)
		buf = append(buf, e.Hash[:]...)
	}
	return buf
}

// DecodeTree decodes a tree object's content (without its header), entries
// "<octal mode> <name>\0<20-byte hash>" kept in their stored order, which is
// git's. A tree written as git writes one encodes back (AppendTree) to the
// same bytes; a zero-padded mode, which git's fsck warns about, does not.
func DecodeTree(data []byte) ([]Entry, error) {
	var es []Entry
	for len(data) > 0 {
		mode, rest, ok := bytes.Cut(data, []byte(" "))
		if !ok {
			return nil, fmt.Errorf("tree: entry without a mode")
		}
		m, err := strconv.ParseUint(string(mode), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("tree: bad mode %q", mode)
		}
		name, rest, ok := bytes.Cut(rest, []byte{0})
		if !ok || len(rest) < len(plumbing.ZeroHash) {
			return nil, fmt.Errorf("tree: truncated entry %q", name)
		}
		e := Entry{Name: string(name), Mode: filemode.FileMode(m)}
		copy(e.Hash[:], rest)
		es = append(es, e)
		data = rest[len(e.Hash):]
	}
	return es, nil
}

// Edit is a set of path changes arranged as a directory tree.
type Edit struct {
	children map[string]*Edit
	entry    *Entry // set: replace with this file; nil with del: remove
	del      bool
	leaf     bool
}

// Set replaces the file at slash path p with e; a nil e removes it.
func (t *Edit) Set(p string, e *Entry) {
	n := t
	for _, part := range strings.Split(p, "/") {
		if n.children == nil {
			n.children = map[string]*Edit{}
		}
		c, ok := n.children[part]
		if !ok {
			c = &Edit{}
			n.children[part] = c
		}
		n = c
	}
	n.leaf = true
	n.entry = e
	n.del = e == nil
}

// Apply rewrites tree h bottom-up with the edits and stores every new tree;
// untouched subtrees keep their hashes. It is the one tree builder: records
// build theirs with it from the empty tree. The empty tree is returned but
// not stored (Store.WriteCommit stores it).
func (t *Trees) Apply(h plumbing.Hash, ed *Edit) (plumbing.Hash, error) {
	return t.apply(h, ed, "")
}

func (t *Trees) apply(h plumbing.Hash, ed *Edit, prefix string) (plumbing.Hash, error) {
	es, err := t.Entries(h)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	byName := make(map[string]Entry, len(es))
	for _, e := range es {
		byName[e.Name] = e
	}
	for name, c := range ed.children {
		cur, exists := byName[name]
		if len(c.children) > 0 {
			sub := EmptyTree
			if exists && cur.IsTree() {
				sub = cur.Hash
			}
			nh, err := t.apply(sub, c, prefix+name+"/")
			if err != nil {
				return plumbing.ZeroHash, err
			}
			if nh == EmptyTree {
				delete(byName, name)
				exists = false
			} else {
				if c.leaf && c.entry != nil {
					return plumbing.ZeroHash, fmt.Errorf("path %q is both a file and a directory", prefix+name)
				}
				byName[name] = Entry{Name: name, Mode: filemode.Dir, Hash: nh}
				continue
			}
		}
		if !c.leaf {
			continue
		}
		if c.del {
			if exists && !cur.IsTree() {
				delete(byName, name)
			}
			continue
		}
		byName[name] = Entry{Name: name, Mode: c.entry.Mode, Hash: c.entry.Hash}
	}
	if len(byName) == 0 {
		return EmptyTree, nil
	}
	es = slices.Collect(maps.Values(byName))
	slices.SortFunc(es, func(a, b Entry) int { return strings.Compare(a.SortKey(), b.SortKey()) })
	return t.s.Write(plumbing.TreeObject, AppendTree(nil, es))
}

// Files adds every file entry under tree h to out, keyed by slash path
// under prefix.
func (t *Trees) Files(h plumbing.Hash, prefix string, out map[string]Entry) error {
	es, err := t.Entries(h)
	if err != nil {
		return err
	}
	for _, e := range es {
		if e.IsTree() {
			if err := t.Files(e.Hash, prefix+e.Name+"/", out); err != nil {
				return err
			}
			continue
		}
		out[prefix+e.Name] = e
	}
	return nil
}

// ModeText is a mode as a tree object spells it: octal, no leading zero.
// The modes an index holds are spelled from constants, not formatted.
func ModeText(m filemode.FileMode) string {
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
