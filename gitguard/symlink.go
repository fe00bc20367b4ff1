package gitguard

import (
	"fmt"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Symlink targets are judged by resolving them, not by cleaning the path:
// "up/../.." names the parent of wherever up leads, which a lexical clean
// cancels to ".". linkView is the tree a link is resolved in, and
// resolveLink walks a target component by component as the kernel does.

// maxLinkHops bounds the symlinks followed in one resolution (Linux's
// MAXSYMLINKS is 40).
const maxLinkHops = 40

// linkView is a tree of files as the candidate holds them: files by path
// (their targets read on demand for symlinks) and every directory.
type linkView struct {
	files  map[string]filemode.FileMode
	dirs   map[string]bool
	target func(p string) (string, error)
}

func newLinkView(target func(string) (string, error)) *linkView {
	return &linkView{files: map[string]filemode.FileMode{}, dirs: map[string]bool{"": true}, target: target}
}

// add records a file (or, with mode Dir, a directory) and its parents.
func (v *linkView) add(p string, mode filemode.FileMode) {
	if mode == filemode.Dir {
		v.dirs[p] = true
	} else {
		v.files[p] = mode
	}
	for i := strings.LastIndexByte(p, '/'); i > 0; i = strings.LastIndexByte(p[:i], '/') {
		if v.dirs[p[:i]] {
			break
		}
		v.dirs[p[:i]] = true
	}
}

// resolveLink follows the target t of the symlink at p through the view and
// says why it is refused ("" when it stays in the repository): it leaves
// the repository (an absolute target always does: the clean room moves the
// tree), enters a .git directory or the workspace, or loops. A component
// that does not exist holds no links; what follows it is taken as written,
// as the kernel would once such directories were created.
func (v *linkView) resolveLink(p, t, workspace string) string {
	var cur []string // the directory reached, from the root
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		cur = strings.Split(p[:i], "/")
	}
	if t == "" {
		return "has an empty target"
	}
	if strings.HasPrefix(t, "/") {
		return "points outside the repository"
	}
	rest := []string{t}
	hops := 0
	for len(rest) > 0 {
		var c string
		c, rest = nextComponent(rest)
		switch c {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return "points outside the repository"
			}
			cur = cur[:len(cur)-1]
			continue
		}
		next := c
		if len(cur) > 0 {
			next = strings.Join(cur, "/") + "/" + c
		}
		if why := entryRefusal(c, next, workspace); why != "" {
			return why
		}
		mode, ok := v.files[next]
		switch {
		case ok && mode == filemode.Symlink:
			if hops++; hops > maxLinkHops {
				return "resolves through too many symlinks"
			}
			lt, why := v.linkTarget(next)
			if why != "" {
				return why
			}
			rest = append([]string{lt}, rest...)
		case ok && len(rest) > 0 && hasComponent(rest):
			return "" // a file in the middle: the target dangles
		default:
			// A file at the end, a directory, or absent: nothing below an absent
			// component can be a link.
			cur = append(cur, c)
		}
	}
	return ""
}

// nextComponent splits the first component off the stack of paths still to walk; the
// rest of that path goes back on top.
func nextComponent(rest []string) (string, []string) {
	c, more, _ := strings.Cut(rest[0], "/")
	rest = rest[1:]
	if more = strings.TrimLeft(more, "/"); more != "" {
		rest = append([]string{more}, rest...)
	}
	return c, rest
}

// entryRefusal is why a target may not pass through the component c, reached as next:
// it is a .git directory, or the workspace or inside it. "" when it may.
func entryRefusal(c, next, workspace string) string {
	if strings.EqualFold(c, ".git") {
		return "resolves into .git"
	}
	if workspace != "" && (next == workspace || strings.HasPrefix(next, workspace+"/")) {
		return "resolves into the workspace " + workspace
	}
	return ""
}

// linkTarget is the target of the symlink at next, or why it is refused: it cannot be
// read, or it is absolute.
func (v *linkView) linkTarget(next string) (string, string) {
	lt, err := v.target(next)
	switch {
	case err != nil || lt == "":
		return "", "has a target that cannot be read"
	case strings.HasPrefix(lt, "/"):
		return "", "points outside the repository"
	}
	return lt, ""
}

// hasComponent reports whether any of rest names a component.
func hasComponent(rest []string) bool {
	for _, r := range rest {
		if strings.Trim(r, "/") != "" {
			return true
		}
	}
	return false
}

// linkViewOf is the candidate's view for Check: the index with every
// changed path as the change ends (disk, else index, else HEAD).
func (st *state) linkViewOf() *linkView {
	s := st.s
	final := map[string]layer{}
	for p, ps := range st.paths {
		final[p] = ps.final()
	}
	v := newLinkView(func(p string) (string, error) {
		if ps, ok := st.paths[p]; ok {
			l := final[p]
			if l == ps.w {
				return os.Readlink(s.r.root + "/" + p)
			}
			data, err := s.r.objects().Blob(l.hash)
			return string(data), err
		}
		k := s.entryIndex(p)
		if k < 0 {
			return "", fmt.Errorf("%s: not in the index", p)
		}
		data, err := s.r.objects().Blob(s.idx.Entries[k].Hash)
		return string(data), err
	})
	for i := range s.idx.Entries {
		e := &s.idx.Entries[i]
		if _, changed := final[e.Path]; changed || e.Stage != 0 {
			continue
		}
		v.add(e.Path, e.FileMode())
	}
	for p, l := range final {
		if !l.present {
			continue
		}
		v.add(p, l.mode)
	}
	return v
}
