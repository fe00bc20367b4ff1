package gitguard

import (
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/objstore"
)

// EmptiedTree stores and returns tree with every regular or executable file that allow
// matches replaced by an empty file, and the paths it emptied (sorted). hgate check scores
// it to see whether the benchmark reads the allowed files at all: the variant lives only
// in the object database, so no worktree, the user's or another, is written.
func (r *Repo) EmptiedTree(tree plumbing.Hash, allow []string) (plumbing.Hash, []string, error) {
	empty, err := r.objects().Write(plumbing.BlobObject, nil)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	files, tr, err := r.treeFiles(tree)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	m := NewMatcher(allow)
	ed := &objstore.Edit{}
	var paths []string
	for p, e := range files {
		regular := e.Mode == filemode.Regular || e.Mode == filemode.Executable
		if regular && e.Hash != empty && m.Match(p, false) {
			ed.Set(p, &objstore.Entry{Mode: e.Mode, Hash: empty})
			paths = append(paths, p)
		}
	}
	return applyVariant(tr, tree, ed, paths)
}

// AllowedFiles lists the regular and executable files of tree that allow matches, sorted:
// what the agent may change there.
func (r *Repo) AllowedFiles(tree plumbing.Hash, allow []string) ([]string, error) {
	files, _, err := r.treeFiles(tree)
	if err != nil {
		return nil, err
	}
	m := NewMatcher(allow)
	var out []string
	for p, e := range files {
		if (e.Mode == filemode.Regular || e.Mode == filemode.Executable) && m.Match(p, false) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// OverlayAllowed returns tree with the paths allow matches as they are in from (added,
// changed or removed) and every other path as in tree, and the paths that differ (sorted):
// what a candidate made of from's allowed files would be, as Step 0 would let it through.
func (r *Repo) OverlayAllowed(tree, from plumbing.Hash, allow []string) (plumbing.Hash, []string, error) {
	base, tr, err := r.treeFiles(tree)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	other, _, err := r.treeFiles(from)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	m := NewMatcher(allow)
	ed := &objstore.Edit{}
	var paths []string
	for p, e := range other {
		if b, ok := base[p]; m.Match(p, false) && (!ok || b != e) {
			ed.Set(p, &objstore.Entry{Mode: e.Mode, Hash: e.Hash})
			paths = append(paths, p)
		}
	}
	for p := range base {
		if _, ok := other[p]; !ok && m.Match(p, false) {
			ed.Set(p, nil)
			paths = append(paths, p)
		}
	}
	return applyVariant(tr, tree, ed, paths)
}

// applyVariant stores tree with ed applied, and returns it with the paths ed changed
// (sorted); tree itself when ed changed none.
func applyVariant(tr *objstore.Trees, tree plumbing.Hash, ed *objstore.Edit, paths []string) (plumbing.Hash, []string, error) {
	slices.Sort(paths)
	if len(paths) == 0 {
		return tree, nil, nil
	}
	out, err := tr.Apply(tree, ed)
	return out, paths, err
}

// treeFiles lists the files of tree by slash path.
func (r *Repo) treeFiles(tree plumbing.Hash) (map[string]objstore.Entry, *objstore.Trees, error) {
	tr := r.objects().Trees(nil)
	files := map[string]objstore.Entry{}
	if err := tr.Files(tree, "", files); err != nil {
		return nil, nil, err
	}
	return files, tr, nil
}
