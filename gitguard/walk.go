package gitguard

import (
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/index"
)

// wstate is what the worktree holds at a tracked path.
type wstate struct {
	present bool
	mode    filemode.FileMode // Regular, Executable, Symlink, Submodule, Dir; Empty for fifos and such
	hash    plumbing.Hash     // content hash (zero for directories)
	nested  bool              // a directory holding its own repository
}

// untrackedFile is a file or symlink on disk that the index does not hold
// and the base's ignore rules do not hide.
type untrackedFile struct {
	path   string
	mode   filemode.FileMode // Regular, Executable, Symlink, or Dir for a nested repository
	nested bool
}

// walker compares the worktree with the index: one readdir per directory
// that is tracked or not ignored, one lstat per tracked file, a hash only
// when the stat data does not vouch for the content. A few workers share a
// stack of jobs, each with its own buffers, so a directory costs no
// goroutine, map or per-entry string.
type walker struct {
	s     *snapshot
	rules map[string]patternList // .gitignore rules by directory
	wt    []wstate               // parallel to s.idx.entries

	mu      sync.Mutex
	cond    sync.Cond
	jobs    []walkJob
	pending int // jobs queued or running

	untracked  []untrackedFile
	nestedDirs []string // tracked directories with a .git inside
	errs       []error
}

// walkJob is a directory to read, or a chunk of tracked files to check in a
// directory already open.
type walkJob struct {
	d       string // "" or "a/b/"
	lo, hi  int    // d's index entries
	ignored bool   // d is ignored: only its tracked files matter
	st      ignoreStack

	open  *sharedDir
	stats []int
}

// sharedDir is a directory handle used by several stat chunks; the last
// one closes it.
type sharedDir struct {
	dh   *dirHandle
	refs atomic.Int32
}

func (sd *sharedDir) release() {
	if sd.refs.Add(-1) == 0 {
		sd.dh.close()
	}
}

// walkScratch is one worker's reusable memory.
type walkScratch struct {
	buf   []byte
	ents  []dirent
	seen  []bool
	stats []int
	subs  []walkJob
}

// statChunk is how many tracked files one job checks, so a large directory
// uses every core.
const statChunk = 256

// walk returns the snapshot's walk, walking now if it was not done yet.
func (s *snapshot) walk() (*walker, error) {
	if s.walked != nil {
		return s.walked.w, s.walked.err
	}
	return s.walkWith(s.ignores)
}

// walkWith walks the worktree with the given .gitignore rules by directory.
func (s *snapshot) walkWith(rules map[string]patternList) (*walker, error) {
	w := &walker{s: s, rules: rules, wt: make([]wstate, len(s.idx.Entries))}
	w.cond.L = &w.mu
	w.jobs = append(w.jobs, walkJob{hi: len(s.idx.Entries), st: pushRules(rules, nil, "")})
	w.pending = 1
	// Syscalls on cached metadata keep a core busy; one extra worker covers
	// the time another waits on the disk.
	n := runtime.GOMAXPROCS(0) + 1
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.work()
		}()
	}
	wg.Wait()
	if len(w.errs) > 0 {
		return nil, errors.Join(w.errs...)
	}
	return w, nil
}

func (w *walker) work() {
	sc := &walkScratch{buf: make([]byte, 32<<10)}
	w.mu.Lock()
	for {
		for len(w.jobs) == 0 && w.pending > 0 {
			w.cond.Wait()
		}
		if w.pending == 0 {
			w.mu.Unlock()
			return
		}
		j := w.jobs[len(w.jobs)-1]
		w.jobs = w.jobs[:len(w.jobs)-1]
		w.mu.Unlock()
		if j.open != nil {
			w.statEntries(j.open.dh, j.stats)
			j.open.release()
		} else {
			w.dir(j, sc)
		}
		w.mu.Lock()
		if w.pending--; w.pending == 0 {
			w.cond.Broadcast()
		}
	}
}

// push queues jobs; the caller holds none of the walker's locks.
func (w *walker) push(js []walkJob) {
	if len(js) == 0 {
		return
	}
	w.mu.Lock()
	w.jobs = append(w.jobs, js...)
	w.pending += len(js)
	w.mu.Unlock()
	if len(js) == 1 {
		w.cond.Signal()
	} else {
		w.cond.Broadcast()
	}
}

func (w *walker) fail(err error) {
	w.mu.Lock()
	w.errs = append(w.errs, err)
	w.mu.Unlock()
}

// inChild reports whether p, below directory prefix d, lies in d's child
// directory name.
func inChild(p string, d int, name string) bool {
	return len(p) > d+len(name) && p[d+len(name)] == '/' && p[d:d+len(name)] == name
}

// find is the position of name among ents sorted by name, or -1.
func find(ents []dirent, name string) int {
	lo, hi := 0, len(ents)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ents[m].name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(ents) && ents[lo].name == name {
		return lo
	}
	return -1
}

// dir walks directory j.d, whose index entries are j.lo..j.hi.
func (w *walker) dir(j walkJob, sc *walkScratch) {
	s := w.s
	d := j.d
	full := s.r.root + "/" + d
	dh, err := openDir(full)
	if err == nil {
		sc.ents, err = dh.entries(sc.buf, sc.ents[:0])
		if err != nil {
			dh.close()
		}
	}
	if err != nil {
		if d != "" && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP)) {
			return // everything below is deleted: wt stays zero
		}
		w.fail(fmt.Errorf("read directory %s: %w", strings.TrimSuffix(full, "/"), err))
		return
	}
	ents := sc.ents
	for i := range ents {
		if ents[i].typ != dtUnknown {
			continue
		}
		t := dtOther
		if st, err := dh.stat(ents[i].name); err == nil {
			switch {
			case st.isDir():
				t = dtDir
			case st.isReg():
				t = dtReg
			case st.isLink():
				t = dtLink
			}
		}
		ents[i].typ = t
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	seen := sc.seen[:0]
	for range ents {
		seen = append(seen, false)
	}
	sc.seen = seen

	es := s.idx.Entries
	stats := sc.stats[:0]
	subs := sc.subs[:0]
	for i := j.lo; i < j.hi; {
		rest := es[i].Path[len(d):]
		if slash := strings.IndexByte(rest, '/'); slash >= 0 {
			name := rest[:slash]
			k := i + 1
			for k < j.hi && inChild(es[k].Path, len(d), name) {
				k++
			}
			if at := find(ents, name); at >= 0 && ents[at].typ == dtDir {
				seen[at] = true
				sub := es[i].Path[:len(d)+len(name)+1]
				subIgnored := j.ignored || s.ignored(j.st, sub[:len(sub)-1], true)
				subs = append(subs, walkJob{d: sub, lo: i, hi: k, ignored: subIgnored, st: pushRules(w.rules, j.st, sub)})
			}
			// Otherwise the tracked files below are gone (or behind a
			// symlink, which git does not follow either) and whatever
			// now sits at name is judged as untracked below.
			i = k
			continue
		}
		if at := find(ents, rest); at >= 0 {
			seen[at] = true
			for ; i < j.hi && es[i].Path[len(d):] == rest; i++ {
				stats = append(stats, i)
			}
			continue
		}
		i++
	}
	sc.subs = subs[:0]
	w.push(subs)

	for at := range ents {
		if seen[at] {
			continue
		}
		name, typ := ents[at].name, ents[at].typ
		if name == ".git" {
			if d != "" {
				w.mu.Lock()
				w.nestedDirs = append(w.nestedDirs, strings.TrimSuffix(d, "/"))
				w.mu.Unlock()
			}
			continue
		}
		if j.ignored {
			continue
		}
		switch typ {
		case dtDir:
			p := d + name
			if s.ignored(j.st, p, true) {
				continue
			}
			if _, err := lstat(full + name + "/.git"); err == nil {
				w.addUntracked(untrackedFile{path: p, mode: filemode.Dir, nested: true})
				continue
			}
			sub := p + "/"
			w.push([]walkJob{{d: sub, ignored: false, st: pushRules(w.rules, j.st, sub)}})
		case dtReg, dtLink:
			p := d + name
			if s.ignored(j.st, p, false) {
				continue
			}
			mode := filemode.Regular
			if typ == dtLink {
				mode = filemode.Symlink
			}
			w.addUntracked(untrackedFile{path: p, mode: mode})
		default:
			// A fifo, socket or device: git skips them, but a tree cannot hold one and
			// opening a fifo blocks, so Step 0 reports it (mode Empty) and never reads it.
			p := d + name
			if s.ignored(j.st, p, false) {
				continue
			}
			w.addUntracked(untrackedFile{path: p, mode: filemode.Empty})
		}
	}

	sc.stats = stats[:0]
	if len(stats) <= statChunk {
		w.statEntries(dh, stats)
		dh.close()
		return
	}
	// Hand chunks of a large directory to the other workers; they share
	// the handle.
	sd := &sharedDir{dh: dh}
	var chunks []walkJob
	for len(stats) > statChunk {
		chunks = append(chunks, walkJob{open: sd, stats: slices.Clone(stats[:statChunk])})
		stats = stats[statChunk:]
	}
	sd.refs.Store(int32(len(chunks) + 1))
	w.push(chunks)
	w.statEntries(dh, stats)
	sd.release()
}

func (w *walker) addUntracked(u untrackedFile) {
	w.mu.Lock()
	w.untracked = append(w.untracked, u)
	w.mu.Unlock()
}

func (w *walker) statEntries(dh *dirHandle, idxs []int) {
	for _, k := range idxs {
		if err := w.statEntry(dh, k); err != nil {
			w.fail(err)
		}
	}
}

var emptyBlob = plumbing.NewHash("e69de29bb2d1d6434b8b29ae775a8c2d48c53391")

// statEntry fills wt[k] for a tracked path present in its directory.
func (w *walker) statEntry(dh *dirHandle, k int) error {
	s := w.s
	e := &s.idx.Entries[k]
	st, err := dh.stat(e.Path[strings.LastIndexByte(e.Path, '/')+1:])
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("stat %s: %w", e.Path, err)
	}
	full := func() string { return s.r.root + "/" + e.Path }
	ws := &w.wt[k]
	ws.present = true
	em := e.FileMode()
	// The stat data vouches for the content only for a path the guard does
	// not count (an allowed one: its edits are no violation) and a merged
	// entry of the same type whose cached stat matches and which is not
	// racily clean (written in the same instant as the index, so a later
	// edit of equal size could carry the same times). Index flags play no
	// part. Every other path is hashed: the agent runs as the same user and
	// can rewrite the index's stat fields, or put an edited file's mtime back.
	cacheOK := e.Stage == 0 && s.allow.Match(e.Path, false) && st.matches(e) && !w.racy(e) && (e.Size != 0 || e.Hash == emptyBlob)
	switch {
	case st.isReg():
		ws.mode = filemode.Regular
		if st.mode&0o100 != 0 {
			ws.mode = filemode.Executable
		}
		if cacheOK && (em == filemode.Regular || em == filemode.Executable) {
			ws.hash = e.Hash
			return nil
		}
		ws.hash, err = dh.hashFile(e.Path[strings.LastIndexByte(e.Path, '/')+1:], st.size)
		if err != nil {
			return fmt.Errorf("hash %s: %w", e.Path, err)
		}
	case st.isLink():
		ws.mode = filemode.Symlink
		if cacheOK && em == filemode.Symlink {
			ws.hash = e.Hash
			return nil
		}
		ws.hash, _, err = hashLink(full())
		if err != nil {
			return fmt.Errorf("read symlink %s: %w", e.Path, err)
		}
	case st.isDir():
		if em != filemode.Submodule {
			ws.mode = filemode.Dir
			if _, err := lstat(full() + "/.git"); err == nil {
				ws.nested = true
			}
			return nil
		}
		ws.mode = filemode.Submodule
		ws.hash = submoduleHead(full(), e.Hash)
	default:
		ws.mode = filemode.Empty
	}
	return nil
}

// racy is git's is_racy_timestamp: the file changed no earlier than the
// index was written, so equal stat data proves nothing.
func (w *walker) racy(e *index.Entry) bool {
	ms, mn := int64(e.MtimeS), int64(e.MtimeN)
	return w.s.idxMtimeS < ms || (w.s.idxMtimeS == ms && w.s.idxMtimeN <= mn)
}

// submoduleHead is the commit a submodule's worktree has checked out; an
// unpopulated submodule counts as unchanged, as git counts it, and one that
// cannot be read counts as changed.
func submoduleHead(full string, recorded plumbing.Hash) plumbing.Hash {
	if _, err := lstat(full + "/.git"); err != nil {
		return recorded
	}
	r, err := openAt(full)
	if err != nil {
		return plumbing.ZeroHash
	}
	h, err := r.refStore().Resolve("HEAD")
	if err != nil {
		return plumbing.ZeroHash
	}
	return h
}
