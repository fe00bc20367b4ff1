package objstore

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// CheckPath accepts clean relative slash paths whose parts git can store.
func CheckPath(p string) error {
	if p == "" || path.IsAbs(p) || path.Clean(p) != p || strings.ContainsAny(p, "\x00\\") {
		return fmt.Errorf("path %q: expected a clean relative slash path", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == "." || part == ".." || strings.EqualFold(part, ".git") {
			return fmt.Errorf("path %q: %q is not allowed in a path", p, part)
		}
	}
	return nil
}

// ModeKind names a file mode for messages.
func ModeKind(m filemode.FileMode) string {
	switch m {
	case filemode.Regular, filemode.Executable, filemode.Deprecated:
		return "regular file"
	case filemode.Symlink:
		return "symlink"
	case filemode.Submodule:
		return "submodule"
	case filemode.Dir:
		return "directory"
	}
	return "file with mode " + m.String()
}

// ChangedPaths returns, sorted, the file paths that differ between the trees
// of two commits (a tree hash is accepted too; zero stands for the empty
// tree), nil when none do.
func (s Store) ChangedPaths(from, to plumbing.Hash) ([]string, error) {
	ft, err := s.TreeOf(from)
	if err != nil {
		return nil, err
	}
	tt, err := s.TreeOf(to)
	if err != nil {
		return nil, err
	}
	changes, err := s.Trees(nil).Diff(ft, tt)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, c := range changes {
		paths = append(paths, c.Path)
	}
	sort.Strings(paths)
	return paths, nil
}

// BlobHashes returns the blob hash of every file in a commit's tree, keyed
// by slash path, without reading the blobs. A zero commit gives an empty map.
func (s Store) BlobHashes(commit plumbing.Hash) (map[string]plumbing.Hash, error) {
	tree, err := s.TreeOf(commit)
	if err != nil {
		return nil, err
	}
	flat := map[string]Entry{}
	if err := s.Trees(nil).Files(tree, "", flat); err != nil {
		return nil, err
	}
	out := make(map[string]plumbing.Hash, len(flat))
	for p, e := range flat {
		if e.Mode != filemode.Submodule {
			out[p] = e.Hash
		}
	}
	return out, nil
}

// Files returns the content of every blob in a commit's tree (regular
// files, executables and symlink targets), keyed by slash path. Submodule
// entries have no blob and are left out. A zero commit gives an empty map.
func (s Store) Files(commit plumbing.Hash) (map[string][]byte, error) {
	hashes, err := s.BlobHashes(commit)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(hashes))
	for p, h := range hashes {
		data, err := s.Blob(h)
		if err != nil {
			return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
		}
		out[p] = data
	}
	return out, nil
}

// File returns one regular file of a commit's tree. An absent path (or one
// naming a directory) gives an error wrapping fs.ErrNotExist; a symlink or
// submodule at path is an error too, since the caller wants file content.
func (s Store) File(commit plumbing.Hash, p string) ([]byte, error) {
	if err := CheckPath(p); err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
	}
	tree, err := s.TreeOf(commit)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	e, found, err := s.Trees(nil).Lookup(tree, p)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
	}
	switch {
	case !found || e.Mode == filemode.Dir:
		return nil, fmt.Errorf("read %s at commit %s: %w", p, commit, fs.ErrNotExist)
	case e.Mode != filemode.Regular && e.Mode != filemode.Executable && e.Mode != filemode.Deprecated:
		return nil, fmt.Errorf("read %s at commit %s: it is a %s, expected a regular file", p, commit, ModeKind(e.Mode))
	}
	data, err := s.Blob(e.Hash)
	if err != nil {
		return nil, fmt.Errorf("read %s at %s: %w", p, commit, err)
	}
	return data, nil
}
