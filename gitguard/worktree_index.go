package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/index"
	"github.com/hgate/hgate/gitguard/internal/lockfile"
	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/gitguard/internal/walk"
)

// Index edits for the loop's commit and restore. The index is read with the
// lean reader (internal/index) and written back by a lean encoder: go-git decodes
// and re-encodes every entry through reflection-heavy binary.Read/Write,
// about 45 ms per 10k entries, for a change of a few paths.

// editIndex rewrites the index with the entries in changed (a zero mode
// removes the path, and a file replaces whatever was under its path) and
// every other entry kept as it was, flags included. When the index cannot be
// read and full is set, it is rebuilt from tree. Extensions are dropped: the
// cache tree and the untracked cache no longer match the entries, and git
// rebuilds what it needs.
//
// git trusts an entry whose stat data matches the file (times to the
// second only, unless built with USE_NSEC), so no entry written here may
// carry stat data that a file with other content could match:
//   - a changed entry takes the stat data in stats, taken from the very
//     bytes hgate hashed or wrote; else the old entry's when the blob is the
//     same; else none (zero), which makes git hash the file;
//   - any entry whose mtime is no earlier than the second the old index was
//     written or this operation began (since) is racily clean: an edit in
//     the same second could keep every field. Git smudges such entries
//     (size 0) when it writes an index; so does this, as the new index's
//     later mtime would otherwise make git trust them.
func (r *Repo) editIndex(tree plumbing.Hash, changed map[string]objstore.Entry, stats map[string]walk.Stat, since time.Time, full bool) error {
	idx, changed, cut, err := r.indexToEdit(tree, changed, since, full)
	if err != nil {
		return err
	}
	add, files := changedEntries(idx, changed, stats)
	out := make([]index.Entry, 0, len(idx.Entries)+len(add))
	for _, e := range idx.Entries {
		if _, ok := changed[e.Path]; ok || underFile(files, e.Path) {
			continue
		}
		for len(add) > 0 && add[0].Path < e.Path {
			out = append(out, add[0])
			add = add[1:]
		}
		out = append(out, e)
	}
	out = append(out, add...)
	for k := range out {
		smudgeRacy(&out[k], cut)
	}
	idx.Entries = out
	return r.writeIndexFile(idx)
}

// indexToEdit is the index editIndex starts from, the changes to make in it, and the
// second from which its entries are racily clean (the earliest of since and the index's
// and its shared index's mtimes). With full, a missing index is an empty one and an
// unreadable one is started over from tree (every file of tree then changed).
func (r *Repo) indexToEdit(tree plumbing.Hash, changed map[string]objstore.Entry, since time.Time, full bool) (*index.File, map[string]objstore.Entry, int64, error) {
	path := filepath.Join(r.gitDir, "index")
	cut := since.Unix()
	if st, err := walk.Lstat(path); err == nil && st.MtimeS < cut {
		cut = st.MtimeS
	}
	idx, err := index.Read(path, r.gitDir)
	if err == nil && idx.Shared != "" && idx.SharedMtimeS < cut {
		cut = idx.SharedMtimeS
	}
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist) && full:
		idx = &index.File{Version: 2}
	case full:
		// Unreadable index: start over from the tree.
		changed = map[string]objstore.Entry{}
		if err := r.objects().Trees(nil).Files(tree, "", changed); err != nil {
			return nil, nil, 0, err
		}
		idx = &index.File{Version: 2}
	default:
		return nil, nil, 0, fmt.Errorf("read index: %w", err)
	}
	return idx, changed, cut, nil
}

// changedEntries are the index entries of changed's files (not its removals), sorted by
// path, each with the stat data in stats, else idx's old entry's when the blob is the
// same, else none; and the set of those files' paths, for the "under a changed file"
// test.
func changedEntries(idx *index.File, changed map[string]objstore.Entry, stats map[string]walk.Stat) ([]index.Entry, map[string]bool) {
	old := make(map[string]*index.Entry, len(changed))
	for k := range idx.Entries {
		e := &idx.Entries[k]
		if _, ok := changed[e.Path]; ok && e.Stage == 0 && !e.IntentToAdd {
			old[e.Path] = e
		}
	}
	files := make(map[string]bool, len(changed))
	add := make([]index.Entry, 0, len(changed))
	for p, te := range changed {
		if te.Mode == 0 {
			continue
		}
		files[p] = true
		e := index.Entry{Path: p, Mode: uint32(te.Mode), Hash: te.Hash}
		if fs, ok := stats[p]; ok && !fs.NoCache && te.Mode != filemode.Submodule {
			e.CtimeS, e.CtimeN = uint32(fs.CtimeS), uint32(fs.CtimeN)
			e.MtimeS, e.MtimeN = uint32(fs.MtimeS), uint32(fs.MtimeN)
			e.Ino, e.UID, e.GID, e.Size = uint32(fs.Ino), fs.UID, fs.GID, uint32(fs.Size)
		} else if o := old[p]; o != nil && o.Hash == te.Hash && o.Mode == e.Mode {
			e = *o
			e.SkipWorktree, e.AssumeValid = false, false
		}
		add = append(add, e)
	}
	sort.Slice(add, func(i, j int) bool { return add[i].Path < add[j].Path })
	return add, files
}

// smudgeRacy gives an entry whose mtime is at or after cut (seconds) the size
// 0, which git (and the guard) read as "hash the file": git's
// ce_smudge_racily_clean_entry, without first proving the content equal.
func smudgeRacy(e *index.Entry, cut int64) {
	if e.FileMode() == filemode.Submodule || e.MtimeS == 0 && e.MtimeN == 0 {
		return
	}
	if int64(e.MtimeS) >= cut {
		e.Size = 0
	}
}

// underFile reports whether a parent directory of p is a file in files.
func underFile(files map[string]bool, p string) bool {
	if len(files) == 0 {
		return false
	}
	for i := strings.IndexByte(p, '/'); i >= 0; {
		if files[p[:i]] {
			return true
		}
		j := strings.IndexByte(p[i+1:], '/')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// writeIndexFile replaces the index the way git does: index.lock, then rename.
// A lock there is one a killed git or hgate left: an agent's git cannot run now
// (it was stopped), so it is removed.
func (r *Repo) writeIndexFile(idx *index.File) error {
	lock, err := lockfile.Create(filepath.Join(r.gitDir, "index"), 0)
	if err == nil {
		err = lock.Commit(index.Encode(idx))
	}
	if err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}
