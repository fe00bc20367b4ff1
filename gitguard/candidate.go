package gitguard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/gitguard/internal/walk"
	"github.com/hgate/hgate/internal/fsafe"
)

// CandidateTree stores and returns the tree the gate judges: HEAD's tree with
// every allowed path as it is on disk now (modified, added when untracked
// and not ignored, or deleted). Forbidden paths keep HEAD's content whatever
// the index or disk hold. Equal content gives the hash `git write-tree`
// would give.
func (r *Repo) CandidateTree(opts Options) (plumbing.Hash, error) {
	s, st, err := r.snapshot(opts)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return r.candidate(s, st, nil)
}

// Inspect is CandidateTree and Check from one look at the worktree: the gate needs
// both, and the walk is most of their cost.
func (r *Repo) Inspect(opts Options) (plumbing.Hash, []Violation, error) {
	s, st, err := r.snapshot(opts)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	tree, err := r.candidate(s, st, nil)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	v, err := violations(s, st)
	return tree, v, err
}

// candidate builds the candidate tree; stats, when not nil, receives the stat
// data of every file it read from disk.
func (r *Repo) candidate(s *snapshot, st *state, stats map[string]walk.Stat) (plumbing.Hash, error) {
	dir, err := r.openRoot()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer dir.Close()
	root := &objstore.Edit{}
	var paths []string
	for p := range st.paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		ps := st.paths[p]
		if !s.allow.Match(p, false) || ps.w.same(ps.h) {
			continue
		}
		if !ps.w.present {
			root.Set(p, nil)
			continue
		}
		switch ps.w.mode {
		case filemode.Regular, filemode.Executable, filemode.Symlink:
		case filemode.Submodule:
			root.Set(p, &objstore.Entry{Mode: filemode.Submodule, Hash: ps.w.hash})
			continue
		case filemode.Empty, filemode.Dir:
			// A fifo, socket or device, or a folder where a file was: Step 0 rejects it
			// ("not a regular file or symlink", "file became a directory"); the tree keeps
			// HEAD's entry, so the gate can answer instead of stopping.
			continue
		default:
			return plumbing.ZeroHash, fmt.Errorf("candidate tree: %s is a %s, which a tree cannot hold", p, objstore.ModeKind(ps.w.mode))
		}
		if ps.w.huge > 0 || ps.w.unreadable || ps.w.hardlink || ps.w.long {
			continue // over gate.max_file_bytes: Step 0 rejects it, and it is never read
		}
		mode := ps.w.mode
		if ps.untracked && mode == filemode.Regular && isExec(dir, p) {
			mode = filemode.Executable
		}
		h, fs, err := r.storeFile(dir, p, mode, s.maxFile)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if stats != nil {
			stats[p] = fs
		}
		root.Set(p, &objstore.Entry{Mode: mode, Hash: h})
	}
	return s.tr.Apply(s.headTree, root)
}

// storeFile writes a file or symlink from disk into the object database, read under
// dir without following a link at any component (fsafe). The stat data returned was
// taken before the bytes were read, so it can only match the file as stored or a later
// edit git must see as racy or changed. A file that grew past max since the walk is an
// error, not read further.
func (r *Repo) storeFile(dir *fsafe.Root, p string, mode filemode.FileMode, max int64) (plumbing.Hash, walk.Stat, error) {
	var data []byte
	var fs walk.Stat
	var err error
	if mode == filemode.Symlink {
		// A symlink cannot change in place: a new one is a new inode and ctime.
		var fi os.FileInfo
		if fi, err = dir.Lstat(p); err == nil {
			fs = walk.InfoStat(fi)
			var t string
			t, err = dir.Readlink(p)
			data = []byte(t)
		}
	} else {
		data, fs, err = readFileStat(dir, p, max)
	}
	if err != nil {
		return plumbing.ZeroHash, walk.Stat{}, fmt.Errorf("candidate tree: read %s: %w", p, err)
	}
	h, err := r.objects().Write(plumbing.BlobObject, data)
	return h, fs, err
}

// isExec: the file p under dir has its owner's executable bit (looked at without
// following a link).
func isExec(dir *fsafe.Root, p string) bool {
	fi, err := dir.Lstat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o100 != 0
}

// readFileStat reads the file p under dir with the stat data of the open file taken
// first. fsafe opens it: a link at any component is refused, as is anything but a
// regular file with a single link (a hard link to a file outside the worktree is never
// read into a tree). A file over max bytes (by its size, or by what reading it gives)
// is not read.
func readFileStat(dir *fsafe.Root, p string, max int64) ([]byte, walk.Stat, error) {
	f, err := dir.Open(p, -1)
	if err != nil {
		return nil, walk.Stat{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, walk.Stat{}, err
	}
	if fi.Size() > max {
		return nil, walk.Stat{}, fmt.Errorf("%d bytes, over gate.max_file_bytes (%d)", fi.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("grew past gate.max_file_bytes (%d) while read", max)
	}
	if err != nil {
		return nil, walk.Stat{}, err
	}
	fs := walk.InfoStat(fi)
	if int64(len(data)) != fi.Size() {
		fs = walk.Stat{} // changed while read: no stat data vouches for it
	}
	return data, fs, nil
}

// Materialize writes the files of tree into dir, which must be empty or
// absent: regular files with their executable bit, symlinks as symlinks,
// submodules as empty directories. An entry whose name could escape dir or
// write into a .git directory is refused, and nothing is ever written
// through an existing symlink.
func (r *Repo) Materialize(tree plumbing.Hash, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("materialize into %s: %w", dir, err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("materialize into %s: %w", dir, err)
	}
	names, err := f.Readdirnames(1)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("materialize into %s: %w", dir, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("materialize into %s: directory is not empty", dir)
	}
	th, err := r.objects().TreeOf(tree)
	if err != nil {
		return err
	}
	// Objects are read here, one at a time (the tree reader's memo is not made for
	// concurrent readers); files are written by a few workers, as creating many small files is what
	// takes the time on a slow disk.
	w := newFileWriters(4)
	err = r.materialize(r.objects().Trees(nil), th, dir, "", w)
	if werr := w.wait(); err == nil {
		err = werr
	}
	return err
}

// fileWriters write files concurrently and keep the first error.
type fileWriters struct {
	jobs chan fileJob
	wg   sync.WaitGroup
	mu   sync.Mutex
	err  error
}

type fileJob struct {
	name, full string
	data       []byte
	perm       os.FileMode
}

func newFileWriters(n int) *fileWriters {
	w := &fileWriters{jobs: make(chan fileJob, 2*n)}
	for range n {
		w.wg.Go(func() {
			for j := range w.jobs {
				if err := writeNewFile(j.full, j.data, j.perm); err != nil {
					w.mu.Lock()
					if w.err == nil {
						w.err = fmt.Errorf("materialize %s: %w", j.name, err)
					}
					w.mu.Unlock()
				}
			}
		})
	}
	return w
}

func (w *fileWriters) wait() error {
	close(w.jobs)
	w.wg.Wait()
	return w.err
}

// writeNewFile creates full with data; O_EXCL never follows or replaces an existing
// entry, symlinks included.
func writeNewFile(full string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm) // the umask may have dropped bits; set them exactly
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (r *Repo) materialize(tr *objstore.Trees, h plumbing.Hash, dir, prefix string, w *fileWriters) error {
	es, err := tr.Entries(h)
	if err != nil {
		return err
	}
	for _, e := range es {
		if err := objstore.CheckName(e.Name); err != nil {
			return fmt.Errorf("materialize %s: %w", prefix+e.Name, err)
		}
		full := filepath.Join(dir, e.Name)
		switch e.Mode {
		case filemode.Dir:
			if err := os.Mkdir(full, 0o755); err != nil {
				return fmt.Errorf("materialize %s: %w", prefix+e.Name, err)
			}
			if err := r.materialize(tr, e.Hash, full, prefix+e.Name+"/", w); err != nil {
				return err
			}
		case filemode.Submodule:
			if err := os.Mkdir(full, 0o755); err != nil {
				return fmt.Errorf("materialize %s: %w", prefix+e.Name, err)
			}
		case filemode.Symlink:
			data, err := r.objects().Blob(e.Hash)
			if err != nil {
				return objstore.ForPath(err, "materialize", prefix+e.Name)
			}
			if err := os.Symlink(string(data), full); err != nil {
				return fmt.Errorf("materialize %s: %w", prefix+e.Name, err)
			}
		case filemode.Regular, filemode.Executable, filemode.Deprecated:
			perm := os.FileMode(0o644)
			if e.Mode == filemode.Executable {
				perm = 0o755
			}
			data, err := r.objects().Blob(e.Hash)
			if err != nil {
				return objstore.ForPath(err, "materialize", prefix+e.Name)
			}
			w.jobs <- fileJob{name: prefix + e.Name, full: full, data: data, perm: perm}
		default:
			return fmt.Errorf("materialize %s: unsupported mode %s", prefix+e.Name, e.Mode)
		}
	}
	return nil
}
