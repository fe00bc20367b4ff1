// Package walk compares a worktree with git's index: one readdir per
// directory that is tracked or not ignored, one lstat per tracked file, and a
// hash of every file whose stat data may not vouch for it (Input.Allow says
// which may). Ignore rules are the caller's (the base commit's .gitignore
// files and hgate.yaml's ignore:); the walk applies them as git does, the
// deepest .gitignore deciding. It is gitguard's walker: what a difference
// means is the guard's question.
package walk

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
	"github.com/hgate/hgate/gitguard/internal/pattern"
)

// State is what the worktree holds at a tracked path. It is kept small (28 bytes): the
// walk writes one per index entry, and each page of them costs a page fault.
type State struct {
	Hash    plumbing.Hash     // content hash (zero for directories)
	Mode    filemode.FileMode // Regular, Executable, Symlink, Submodule, Dir; Empty for fifos and such
	Present bool
	Nested  bool // a directory holding its own repository
	// Unreadable: a regular file its owner may not read (mode without u+r, or a read
	// refused), which was not read (Hash zero): Step 0 refuses it.
	Unreadable bool
	// Hardlink: a changed regular file with more than one link (its other name may be
	// outside the worktree; Hash zero): Step 0 refuses it, and no tree is built from it.
	Hardlink bool
}

// Untracked is a file or symlink on disk that the index does not hold
// and the base's ignore rules do not hide.
type Untracked struct {
	Path string
	// Regular, Executable, Symlink; Dir for a nested repository, or for a folder whose
	// path is past Input.MaxPathBytes (not read: nothing below it could be shorter).
	Mode   filemode.FileMode
	Nested bool
	// Unreadable: a folder its owner may not read or search (its permissions were
	// changed), reported whole and not read.
	Unreadable bool
}

// walker compares the worktree with the index: one readdir per directory
// that is tracked or not ignored, one lstat per tracked file, a hash only
// when the stat data does not vouch for the content. A few workers share a
// stack of jobs, each with its own buffers, so a directory costs no
// goroutine, map or per-entry string.
type walker struct {
	in *Input
	Result

	mu      sync.Mutex
	cond    sync.Cond
	jobs    []walkJob
	pending int // jobs queued or running

	errs []error
}

// walkJob is a directory to read, or a chunk of tracked files to check in a
// directory already open.
type walkJob struct {
	d       string // "" or "a/b/"
	lo, hi  int    // d's index entries
	ignored bool   // d is ignored: only its tracked files matter
	st      Stack
	parent  *sharedDir // d's parent, open: d is opened inside it (nil for the root)

	open  *sharedDir
	stats []statItem
}

// statItem is a tracked file found in its directory's listing: its index entry, and
// whether the listing says it is a regular file (which may be opened before it is
// stated).
type statItem struct {
	k   int
	reg bool
}

// sharedDir is a directory handle used by several jobs (stat chunks, and the
// subdirectories opened inside it); the last one closes it.
type sharedDir struct {
	dh   *dirHandle
	refs atomic.Int32
}

func (sd *sharedDir) release() {
	if sd.refs.Add(-1) == 0 {
		sd.dh.close()
	}
}

// walkScratch is one worker's reusable memory. The names in ents point into buf: they
// are valid until the worker lists its next directory.
type walkScratch struct {
	buf   []byte
	ents  []dirent
	seen  []bool
	stats []statItem
	subs  []walkJob
}

// statChunk is how many tracked files one job checks, so a large directory
// uses every core.
const statChunk = 256

// Input is what a walk compares: the worktree under Root with the index's
// entries, as the base's ignore rules see it.
type Input struct {
	Root    string
	Entries []index.Entry
	Rules   map[string]pattern.List // .gitignore rules by directory ("" or "a/b/")
	Extra   pattern.List            // patterns that ignore on their own (hgate.yaml ignore:)
	// Allow is the paths whose stat data may spare hashing: only an allowed
	// file, whose edits are no violation, is trusted to the index's copy.
	Allow *pattern.Matcher
	// IndexMtimeS and IndexMtimeN are when the index (or its shared index)
	// was written: an entry not older is racily clean and always hashed.
	IndexMtimeS, IndexMtimeN int64
	// Submodule is the commit the repository at full has checked out, or
	// recorded when it has none.
	Submodule func(full string, recorded plumbing.Hash) plumbing.Hash
	// MaxFileBytes, when positive, is the largest regular file the walk hashes; a
	// larger one it only reports (Result.Huge).
	MaxFileBytes int64
	// MaxPathBytes, when positive, is the longest path of an untracked folder the walk
	// reads; a longer one it reports whole, unread. So a tree thousands of folders deep
	// costs the walk about MaxPathBytes/2 levels, not its depth squared in path bytes.
	MaxPathBytes int
}

// Result is what the worktree holds: one State per index entry, the
// untracked files that are not ignored, and the tracked directories that
// hold a .git of their own.
type Result struct {
	WT []State // parallel to Input.Entries
	// Huge is the size of each regular file over Input.MaxFileBytes, by index entry:
	// not read (its State's Hash is zero).
	Huge       map[int]int64
	Untracked  []Untracked
	NestedDirs []string // tracked directories with a .git inside
}

// Walk walks the worktree.
func Walk(in *Input) (*Result, error) {
	w := &walker{in: in, Result: Result{WT: make([]State, len(in.Entries))}}
	w.cond.L = &w.mu
	w.jobs = append(w.jobs, walkJob{hi: len(in.Entries), st: Push(in.Rules, nil, "")})
	w.pending = 1
	// One worker a P: the per-file calls are raw on Linux (sys_linux.go), so a
	// worker waiting on the disk keeps its P and an extra one could not run.
	n := runtime.GOMAXPROCS(0)
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
	return &w.Result, nil
}

func (w *walker) work() {
	sc := &walkScratch{}
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

// dir walks directory j.d, whose index entries are j.lo..j.hi: its tracked
// subdirectories are queued, its untracked entries judged, its tracked files stated.
func (w *walker) dir(j walkJob, sc *walkScratch) {
	full := w.in.Root + "/" + j.d
	dh, ok := w.readDir(j, full, sc)
	if !ok {
		return
	}
	sd := &sharedDir{dh: dh}
	sd.refs.Store(1) // this job's own hold, let go at the end of statAll
	seen, stats := w.tracked(j, sd, sc)
	for at := range sc.ents {
		if !seen[at] {
			w.untracked(j, sd, full, sc.ents[at])
		}
	}
	sc.stats = stats[:0]
	w.statAll(sd, stats)
}

// openJobDir opens directory j.d: inside its parent's open handle, without following
// a link, so a parent folder swapped for a link while the walk runs is never followed
// (and the path is not looked up again from the root); the root by its path.
func openJobDir(j walkJob, full string) (*dirHandle, error) {
	if j.parent == nil {
		return openDir(full)
	}
	defer j.parent.release()
	name := strings.TrimSuffix(j.d, "/")
	return openDirAt(j.parent.dh, name[strings.LastIndexByte(name, '/')+1:])
}

// readDir opens directory j.d (at full) and reads its entries into sc.ents, sorted by name, each
// with its type; false when there is nothing to walk (a tracked directory that is gone
// is no error: everything below it is deleted, and wt stays zero).
func (w *walker) readDir(j walkJob, full string, sc *walkScratch) (*dirHandle, bool) {
	d := j.d
	dh, err := openJobDir(j, full)
	if err == nil {
		sc.ents, err = dh.entries(&sc.buf, sc.ents[:0])
		if err != nil {
			dh.close()
		}
	}
	switch {
	case err == nil:
	case d != "" && errors.Is(err, fs.ErrPermission):
		w.unreadableDir(j)
		return nil, false
	case d == "" || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP)):
		w.fail(fmt.Errorf("read directory %s: %w", strings.TrimSuffix(full, "/"), err))
		return nil, false
	default:
		return nil, false
	}
	resolveTypes(dh, sc.ents)
	slices.SortFunc(sc.ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	return dh, true
}

// unreadableDir reports directory j.d, which its owner may not read or search (an agent
// took the rights of a folder it may write away, to stop whoever walks it next): an
// untracked one whole, a tracked one's files each as present and unreadable. Nothing
// below it is read, and Step 0 refuses it.
func (w *walker) unreadableDir(j walkJob) {
	if j.lo == j.hi {
		if !j.ignored {
			w.addUntracked(Untracked{Path: strings.TrimSuffix(j.d, "/"), Mode: filemode.Dir, Unreadable: true})
		}
		return
	}
	for k := j.lo; k < j.hi; k++ {
		w.WT[k] = State{Mode: w.in.Entries[k].FileMode(), Present: true, Unreadable: true}
	}
}

// resolveTypes stats the entries whose type the directory listing did not give.
func resolveTypes(dh *dirHandle, ents []dirent) {
	for i := range ents {
		if ents[i].typ != dtUnknown {
			continue
		}
		t := dtOther
		if st, err := dh.stat(ents[i].name); err == nil {
			switch {
			case st.IsDir():
				t = dtDir
			case st.IsReg():
				t = dtReg
			case st.IsLink():
				t = dtLink
			}
		}
		ents[i].typ = t
	}
}

// tracked matches the directory's index entries against its listing (sc.ents): it queues
// each tracked subdirectory still a directory, and returns which entries are tracked
// (seen) and the index entries of the tracked files present (to stat).
func (w *walker) tracked(j walkJob, sd *sharedDir, sc *walkScratch) ([]bool, []statItem) {
	ents, d, es := sc.ents, j.d, w.in.Entries
	seen := sc.seen[:0]
	for range ents {
		seen = append(seen, false)
	}
	sc.seen = seen
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
				subs = append(subs, w.subJob(j, sd, es[i].Path[:len(d)+len(name)+1], i, k))
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
				stats = append(stats, statItem{k: i, reg: ents[at].typ == dtReg})
			}
			continue
		}
		i++
	}
	sc.subs = subs[:0]
	w.push(subs)
	return seen, stats
}

// subJob is the job of tracked subdirectory sub (ending in '/') of j (open as sd), whose index
// entries are lo..hi.
func (w *walker) subJob(j walkJob, sd *sharedDir, sub string, lo, hi int) walkJob {
	subIgnored := j.ignored || Ignored(w.in.Extra, j.st, sub[:len(sub)-1], true)
	sd.refs.Add(1) // released when the job has opened sub
	return walkJob{d: sub, lo: lo, hi: hi, ignored: subIgnored, st: Push(w.in.Rules, j.st, sub), parent: sd}
}

// untracked judges one entry of directory j.d (at full, open as sd) that the index does not track:
// a nested repository's .git is noted, an ignored entry skipped, a directory queued (or
// reported whole when it holds a repository), anything else reported.
func (w *walker) untracked(j walkJob, sd *sharedDir, full string, ent dirent) {
	name, typ := ent.name, ent.typ
	d := j.d
	if name == ".git" {
		if d != "" {
			w.mu.Lock()
			w.NestedDirs = append(w.NestedDirs, strings.TrimSuffix(d, "/"))
			w.mu.Unlock()
		}
		return
	}
	if j.ignored {
		return
	}
	p := d + name
	switch typ {
	case dtDir:
		if Ignored(w.in.Extra, j.st, p, true) {
			return
		}
		if w.in.MaxPathBytes > 0 && len(p) > w.in.MaxPathBytes {
			w.addUntracked(Untracked{Path: p, Mode: filemode.Dir})
			return
		}
		if _, err := Lstat(full + name + "/.git"); err == nil {
			w.addUntracked(Untracked{Path: p, Mode: filemode.Dir, Nested: true})
			return
		}
		sub := p + "/"
		sd.refs.Add(1) // released when the job has opened sub
		w.push([]walkJob{{d: sub, ignored: false, st: Push(w.in.Rules, j.st, sub), parent: sd}})
	case dtReg, dtLink:
		if Ignored(w.in.Extra, j.st, p, false) {
			return
		}
		mode := filemode.Regular
		if typ == dtLink {
			mode = filemode.Symlink
		}
		w.addUntracked(Untracked{Path: p, Mode: mode})
	default:
		// A fifo, socket or device: git skips them, but a tree cannot hold one and
		// opening a fifo blocks, so Step 0 reports it (mode Empty) and never reads it.
		if Ignored(w.in.Extra, j.st, p, false) {
			return
		}
		w.addUntracked(Untracked{Path: p, Mode: filemode.Empty})
	}
}

// statAll stats the directory's tracked files and lets go of this job's hold on
// its handle; a large directory's are handed in chunks to the other workers, who
// share the handle.
func (w *walker) statAll(sd *sharedDir, stats []statItem) {
	var chunks []walkJob
	for len(stats) > statChunk {
		chunks = append(chunks, walkJob{open: sd, stats: slices.Clone(stats[:statChunk])})
		stats = stats[statChunk:]
	}
	sd.refs.Add(int32(len(chunks)))
	w.push(chunks)
	w.statEntries(sd.dh, stats)
	sd.release()
}

// addUntracked records u. Its path is copied: at the root, d + name is the listing's
// name itself, which points into the worker's reused buffer.
func (w *walker) addUntracked(u Untracked) {
	u.Path = strings.Clone(u.Path)
	w.mu.Lock()
	w.Untracked = append(w.Untracked, u)
	w.mu.Unlock()
}

func (w *walker) statEntries(dh *dirHandle, items []statItem) {
	for _, it := range items {
		if err := w.statEntry(dh, it); err != nil {
			w.fail(err)
		}
	}
}

// huge reports whether a tracked file of size bytes is over Input.MaxFileBytes and not
// the size the index records (below 4 GiB, where the index's 32 bits hold it): a file
// committed at its size is read as before, one grown past the bound never is.
func (w *walker) huge(e *index.Entry, size int64) bool {
	m := w.in.MaxFileBytes
	return m > 0 && size > m && (size >= 1<<32 || uint32(size) != e.Size)
}

// emptyBlob is the empty blob's id, e69de29bb2d1d6434b8b29ae775ad8c2e48c5391, as bytes: plumbing.NewHash
// would decode it at every start of every command. (The hex here was mistyped before, so an
// empty file was never taken from the index's stat cache: hashed each time, never wrong.)
var emptyBlob = plumbing.Hash{0xe6, 0x9d, 0xe2, 0x9b, 0xb2, 0xd1, 0xd6, 0x43, 0x4b, 0x8b, 0x29, 0xae, 0x77, 0x5a, 0xd8, 0xc2, 0xe4, 0x8c, 0x53, 0x91}

// statEntry fills wt[it.k] for a tracked path present in its directory.
func (w *walker) statEntry(dh *dirHandle, it statItem) error {
	e := &w.in.Entries[it.k]
	name := e.Path[strings.LastIndexByte(e.Path, '/')+1:]
	// The stat data vouches for the content only for a path the guard does
	// not count (an allowed one: its edits are no violation) and a merged
	// entry of the same type whose cached stat matches and which is not
	// racily clean (written in the same instant as the index, so a later
	// edit of equal size could carry the same times). Index flags play no
	// part. Every other path is hashed: the agent runs as the same user and
	// can rewrite the index's stat fields, or put an edited file's mtime back.
	allowed := e.Stage == 0 && w.in.Allow.Match(e.Path, false)
	st, f, err := lookup(dh, name, it.reg && !allowed)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("stat %s: %w", e.Path, err)
	}
	if f.ok {
		defer f.close()
	}
	ws := &w.WT[it.k]
	ws.Present = true
	cacheOK := allowed && st.Matches(e) && !w.racy(e) && (e.Size != 0 || e.Hash == emptyBlob)
	switch {
	case st.IsReg():
		return w.regState(dh, it.k, &st, f, cacheOK)
	case st.IsLink():
		return linkState(dh, e, ws, cacheOK)
	case st.IsDir():
		w.dirState(e, ws)
	default:
		ws.Mode = filemode.Empty
	}
	return nil
}

// lookup is the stat data of name in dh. A regular file the walk will hash is opened
// first and stated through its descriptor (f.ok; the caller closes it): one path
// lookup where stat and open took two, and the stat data is that of the file read. A
// name that cannot be opened so (gone, replaced by a link since the listing, one its
// owner may not read) is stated by name, as is every other entry.
func lookup(dh *dirHandle, name string, open bool) (Stat, openFile, error) {
	if open {
		if st, f, err := dh.openStat(name); err == nil {
			return st, f, nil
		}
	}
	st, err := dh.stat(name)
	return st, openFile{}, err
}

// regState fills the state of tracked entry k, a regular file on disk of stat data st
// (open as f when f.ok): hashed unless cacheOK lets the index vouch, refused unread
// when its owner may not read it or it grew over the size bound.
func (w *walker) regState(dh *dirHandle, k int, st *Stat, f openFile, cacheOK bool) error {
	e, ws := &w.in.Entries[k], &w.WT[k]
	ws.Mode = filemode.Regular
	if st.Mode&0o100 != 0 {
		ws.Mode = filemode.Executable
	}
	if st.Mode&0o400 == 0 {
		ws.Unreadable = true // a mode change git cannot record: refused, not read
		return nil
	}
	if em := e.FileMode(); cacheOK && (em == filemode.Regular || em == filemode.Executable) {
		ws.Hash = e.Hash
		return nil
	}
	if w.huge(e, st.Size) {
		w.mu.Lock() // never read: a sparse 64 GB file would take minutes
		if w.Huge == nil {
			w.Huge = map[int]int64{}
		}
		w.Huge[k] = st.Size
		w.mu.Unlock()
		return nil
	}
	var err error
	if f.ok {
		ws.Hash, err = f.hash(st.Size)
	} else {
		ws.Hash, err = dh.hashFile(e.Path[strings.LastIndexByte(e.Path, '/')+1:], st.Size)
	}
	if errors.Is(err, fs.ErrPermission) {
		ws.Unreadable = true
		return nil
	}
	if err == nil && st.Nlink > 1 && ws.Hash != e.Hash {
		ws.Hardlink, ws.Hash = true, plumbing.ZeroHash
		return nil
	}
	if err != nil {
		return fmt.Errorf("hash %s: %w", e.Path, err)
	}
	return nil
}

// linkState fills ws, the state of tracked entry e, a symlink on disk: its target's hash.
func linkState(dh *dirHandle, e *index.Entry, ws *State, cacheOK bool) error {
	ws.Mode = filemode.Symlink
	if cacheOK && e.FileMode() == filemode.Symlink {
		ws.Hash = e.Hash
		return nil
	}
	t, err := dh.readlink(e.Path[strings.LastIndexByte(e.Path, '/')+1:])
	ws.Hash = plumbing.ComputeHash(plumbing.BlobObject, []byte(t))
	if err != nil {
		return fmt.Errorf("read symlink %s: %w", e.Path, err)
	}
	return nil
}

// dirState fills ws, the state of tracked entry e, a directory on disk: a submodule's
// checked-out commit, or a directory where a file was (noting a repository inside).
func (w *walker) dirState(e *index.Entry, ws *State) {
	full := w.in.Root + "/" + e.Path
	if e.FileMode() != filemode.Submodule {
		ws.Mode = filemode.Dir
		if _, err := Lstat(full + "/.git"); err == nil {
			ws.Nested = true
		}
		return
	}
	ws.Mode = filemode.Submodule
	ws.Hash = w.in.Submodule(full, e.Hash)
}

// racy is git's is_racy_timestamp: the file changed no earlier than the
// index was written, so equal stat data proves nothing.
func (w *walker) racy(e *index.Entry) bool {
	ms, mn := int64(e.MtimeS), int64(e.MtimeN)
	return w.in.IndexMtimeS < ms || (w.in.IndexMtimeS == ms && w.in.IndexMtimeN <= mn)
}
