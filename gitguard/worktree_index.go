package gitguard

import (
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/lockfile"
	"github.com/hgate/hgate/gitguard/internal/objstore"
)

// Index edits for the loop's commit and restore. The index is read with the
// lean reader (index.go) and written back by a lean encoder: go-git decodes
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
func (r *Repo) editIndex(tree plumbing.Hash, changed map[string]objstore.Entry, stats map[string]fileStat, since time.Time, full bool) error {
	path := filepath.Join(r.gitDir, "index")
	cut := since.Unix()
	if st, err := lstat(path); err == nil && st.mtimeS < cut {
		cut = st.mtimeS
	}
	idx, err := readIndexFile(path, r.gitDir)
	if err == nil && idx.shared != "" && idx.sharedMtimeS < cut {
		cut = idx.sharedMtimeS
	}
	switch {
	case err == nil:
	case errors.Is(err, os.ErrNotExist) && full:
		idx = &indexFile{version: 2}
	case full:
		// Unreadable index: start over from the tree.
		changed = map[string]objstore.Entry{}
		if err := r.objects().Trees(nil).Files(tree, "", changed); err != nil {
			return err
		}
		idx = &indexFile{version: 2}
	default:
		return fmt.Errorf("read index: %w", err)
	}
	old := make(map[string]*indexEntry, len(changed))
	for k := range idx.entries {
		e := &idx.entries[k]
		if _, ok := changed[e.path]; ok && e.stage == 0 && !e.intentToAdd {
			old[e.path] = e
		}
	}

	// Files (not removals) in changed, for the "under a changed file" test.
	files := make(map[string]bool, len(changed))
	add := make([]indexEntry, 0, len(changed))
	for p, te := range changed {
		if te.Mode == 0 {
			continue
		}
		files[p] = true
		e := indexEntry{path: p, mode: uint32(te.Mode), hash: te.Hash}
		if fs, ok := stats[p]; ok && !fs.noCache && te.Mode != filemode.Submodule {
			e.ctimeS, e.ctimeN = uint32(fs.ctimeS), uint32(fs.ctimeN)
			e.mtimeS, e.mtimeN = uint32(fs.mtimeS), uint32(fs.mtimeN)
			e.ino, e.uid, e.gid, e.size = uint32(fs.ino), fs.uid, fs.gid, uint32(fs.size)
		} else if o := old[p]; o != nil && o.hash == te.Hash && o.mode == e.mode {
			e = *o
			e.skipWorktree, e.assumeValid = false, false
		}
		add = append(add, e)
	}
	sort.Slice(add, func(i, j int) bool { return add[i].path < add[j].path })

	out := make([]indexEntry, 0, len(idx.entries)+len(add))
	for _, e := range idx.entries {
		if _, ok := changed[e.path]; ok || underFile(files, e.path) {
			continue
		}
		for len(add) > 0 && add[0].path < e.path {
			out = append(out, add[0])
			add = add[1:]
		}
		out = append(out, e)
	}
	out = append(out, add...)
	for k := range out {
		smudgeRacy(&out[k], cut)
	}
	idx.entries = out
	return r.writeIndexFile(idx)
}

// smudgeRacy gives an entry whose mtime is at or after cut (seconds) the size
// 0, which git (and the guard) read as "hash the file": git's
// ce_smudge_racily_clean_entry, without first proving the content equal.
func smudgeRacy(e *indexEntry, cut int64) {
	if e.fileMode() == filemode.Submodule || e.mtimeS == 0 && e.mtimeN == 0 {
		return
	}
	if int64(e.mtimeS) >= cut {
		e.size = 0
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

// encodeIndex writes idx in git's index format, version 2, 3 or 4 as read
// (3 at least when an entry has extended flags), with the SHA-1 trailer and
// no extensions. Entries must be sorted by path, then stage.
func encodeIndex(idx *indexFile) []byte {
	version := idx.version
	if version < 2 {
		version = 2
	}
	size := 12 + sha1.Size
	for i := range idx.entries {
		e := &idx.entries[i]
		if (e.skipWorktree || e.intentToAdd) && version < 3 {
			version = 3
		}
		size += entryFixedLength + 2 + len(e.path) + 8
	}
	buf := make([]byte, 0, size)
	be := binary.BigEndian
	buf = append(buf, "DIRC"...)
	buf = be.AppendUint32(buf, version)
	buf = be.AppendUint32(buf, uint32(len(idx.entries)))
	prev := ""
	for i := range idx.entries {
		e := &idx.entries[i]
		start := len(buf)
		for _, v := range [...]uint32{e.ctimeS, e.ctimeN, e.mtimeS, e.mtimeN, e.dev, e.ino, e.mode, e.uid, e.gid, e.size} {
			buf = be.AppendUint32(buf, v)
		}
		buf = append(buf, e.hash[:]...)
		flags := uint16(e.stage&3) << 12
		if e.assumeValid {
			flags |= flagAssumeValid
		}
		ext := e.skipWorktree || e.intentToAdd
		if ext {
			flags |= flagExtended
		}
		flags |= uint16(min(len(e.path), flagNameMask))
		buf = be.AppendUint16(buf, flags)
		if ext {
			var x uint16
			if e.skipWorktree {
				x |= extSkipWorktree
			}
			if e.intentToAdd {
				x |= extIntentToAdd
			}
			buf = be.AppendUint16(buf, x)
		}
		if version == 4 {
			// Prefix compression: how much of the previous path to drop, then the rest.
			common := 0
			for common < len(prev) && common < len(e.path) && prev[common] == e.path[common] {
				common++
			}
			buf = appendOffsetVarint(buf, uint64(len(prev)-common))
			buf = append(buf, e.path[common:]...)
			buf = append(buf, 0)
			prev = e.path
			continue
		}
		buf = append(buf, e.path...)
		// NUL padded to a multiple of 8 bytes, at least one NUL.
		n := len(buf) - start
		for pad := ((n + 8) &^ 7) - n; pad > 0; pad-- {
			buf = append(buf, 0)
		}
	}
	sum := sha1.Sum(buf)
	return append(buf, sum[:]...)
}

// appendOffsetVarint is the inverse of readOffsetVarint.
func appendOffsetVarint(buf []byte, v uint64) []byte {
	var tmp [10]byte
	i := len(tmp) - 1
	tmp[i] = byte(v & 0x7f)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		i--
		tmp[i] = 0x80 | byte(v&0x7f)
	}
	return append(buf, tmp[i:]...)
}

// writeIndexFile replaces the index the way git does: index.lock, then rename.
// A lock there is one a killed git or hgate left: an agent's git cannot run now
// (it was stopped), so it is removed.
func (r *Repo) writeIndexFile(idx *indexFile) error {
	lock, err := lockfile.Create(filepath.Join(r.gitDir, "index"), 0)
	if err == nil {
		err = lock.Commit(encodeIndex(idx))
	}
	if err != nil {
		return fmt.Errorf("write index: %w", err)
	}
	return nil
}
