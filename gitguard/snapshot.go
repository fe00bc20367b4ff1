package gitguard

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/index"
	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/gitguard/internal/walk"
	"github.com/hgate/hgate/internal/fsafe"
)

// Options says what the guard allows and what it compares against.
type Options struct {
	Allow     []string      // gitignore-style allow patterns
	Ignore    []string      // extra ignore patterns (hgate.yaml `ignore:`)
	IndexFile string        // "" = the repository's index; relative paths are taken from the worktree root, as hooks run there
	Base      plumbing.Hash // zero: GatedRef if set, else HEAD
	Workspace string        // slash path of hgate's workspace from the root; a symlink may not lead into it
	// MaxFileBytes bounds the changed files the guard reads (hashes, stores): a larger one
	// is a violation and is never read. 0: DefaultMaxFileBytes.
	MaxFileBytes int64
	// MapIndex reads the index through a read-only mapping the process keeps until it
	// exits (index.ReadMapped), for a short process that checks once (`hgate guard`):
	// it saves faulting a heap copy in. Long-lived processes leave it false, as each
	// check would leave a mapping behind. A truncation of the index while mapped
	// ends the process (SIGBUS; Go exits 2, "could not answer").
	MapIndex bool
	// Preload, with MapIndex, is the repository's index read ahead (Repo.PreloadIndex):
	// the check takes that read of the index instead of reading it again.
	Preload *IndexPreload
}

// DefaultMaxFileBytes is gate.max_file_bytes' default: 100 MiB.
const DefaultMaxFileBytes = 100 << 20

// snapshot is the repository state a check or a candidate is computed from.
type snapshot struct {
	r          *Repo
	headCommit plumbing.Hash
	headTree   plumbing.Hash
	unborn     bool
	base       plumbing.Hash // zero when there is no base commit at all
	baseTree   plumbing.Hash
	baseName   string // how hints name the base: HEAD, refs/hgate/gated or a hash
	history    bool   // base is not an ancestor of HEAD

	idx       *index.File
	indexPath string
	idxMtimeS int64
	idxMtimeN int64
	mapped    bool // read the index through a mapping kept for the process's life (index.ReadMapped)
	tr        *objstore.Trees
	walked    *walkResult // the worktree walk, when done with the snapshot

	baseHead  map[string]objstore.Change // base tree → HEAD tree
	headIndex map[string]objstore.Change // HEAD tree → index

	ignores map[string]patternList // directory ("" or "dir/") → rules of the base's .gitignore there
	extra   patternList            // Options.Ignore
	allow   *Matcher

	workspace string // Options.Workspace, cleaned
	maxFile   int64  // Options.MaxFileBytes, defaulted
}

// snapshot resolves HEAD, the base and the index, diffs their trees, walks
// the worktree, and compares every path across them (see state).
func (r *Repo) snapshot(opts Options) (*snapshot, *state, error) {
	s, err := r.snapshotWalk(opts, true)
	if err != nil {
		return nil, nil, err
	}
	st, err := s.state()
	if err != nil {
		return nil, nil, err
	}
	return s, st, nil
}

// snapshotWalk is snapshot, with the worktree walk optional. The walk starts
// as soon as the index is read, alongside the tree work, with the ignore
// rules of the .gitignore files on disk as a guess; it stands when those
// turn out to be the base commit's (the usual case), and is redone with the
// base's rules otherwise.
func (r *Repo) snapshotWalk(opts Options, walk bool) (*snapshot, error) {
	s := &snapshot{r: r, mapped: opts.MapIndex, allow: NewMatcher(opts.Allow), extra: parseList(strings.Join(opts.Ignore, "\n"), "hgate.yaml ignore", "")}
	s.maxFile = opts.MaxFileBytes
	if s.maxFile <= 0 {
		s.maxFile = DefaultMaxFileBytes
	}
	if opts.Workspace != "" {
		s.workspace = strings.Trim(path.Clean(filepath.ToSlash(opts.Workspace)), "/")
	}
	// HEAD and the base are read while the index is.
	refsDone := make(chan error, 1)
	go func() { refsDone <- s.resolveCommits(opts) }()

	var indexTree plumbing.Hash
	var mem func(plumbing.Hash) ([]objstore.Entry, bool)
	var guess map[string]ignoreGuess
	var early chan walkResult
	err := s.readIndex(opts)
	if err == nil && walk {
		guess = s.guessIgnores()
		early = make(chan walkResult, 1)
		go func() {
			w, err := s.walkWith(guessRules(guess))
			early <- walkResult{w, err}
		}()
	}
	if err == nil {
		// Lazily: a diff that finds HEAD's tree equal never builds the trees' entries.
		if indexTree, mem, err = index.HashTreesLazy(s.idx.Entries); err != nil {
			err = fmt.Errorf("read index %s: %w", s.indexPath, err)
		}
	}
	if rerr := <-refsDone; err == nil {
		err = rerr
	}
	if err == nil {
		err = s.diffTrees(indexTree, mem)
	}
	guessOK := false
	if err == nil {
		guessOK, err = s.loadIgnores(guess)
	}
	if early != nil {
		res := <-early
		s.walked = &res
	}
	if err != nil {
		return nil, err
	}
	if walk && !guessOK {
		w, err := s.walkWith(s.ignores)
		s.walked = &walkResult{w, err}
	}
	return s, nil
}

// walkResult is a finished worktree walk.
type walkResult struct {
	w   *walk.Result
	err error
}

func (s *snapshot) diffTrees(indexTree plumbing.Hash, mem func(plumbing.Hash) ([]objstore.Entry, bool)) error {
	s.tr = s.r.objects().TreesFunc(mem)
	hi, err := s.tr.Diff(s.headTree, indexTree)
	if err != nil {
		return err
	}
	bh, err := s.tr.Diff(s.baseTree, s.headTree)
	if err != nil {
		return err
	}
	s.headIndex = changeMap(hi)
	s.baseHead = changeMap(bh)
	return nil
}

func changeMap(cs []objstore.Change) map[string]objstore.Change {
	m := make(map[string]objstore.Change, len(cs))
	for _, c := range cs {
		m[c.Path] = c
	}
	return m
}

// ignoreGuess is a .gitignore file as read from disk, for the early walk.
type ignoreGuess struct {
	hash plumbing.Hash
	list patternList
}

// guessIgnores reads the regular .gitignore files on disk at the paths the
// index holds them: usually the base commit's, which the hash proves later.
func (s *snapshot) guessIgnores() map[string]ignoreGuess {
	out := map[string]ignoreGuess{}
	var root *fsafe.Root
	for i := range s.idx.Entries {
		e := &s.idx.Entries[i]
		if e.Stage != 0 || e.IntentToAdd || !isGitignore(e.Path) {
			continue
		}
		if root == nil {
			var err error
			if root, err = s.r.openRoot(); err != nil {
				return out
			}
			defer root.Close()
		}
		// fsafe: a regular file of a sane size, never read through a link.
		data, err := root.ReadFile(e.Path, s.maxFile)
		if err != nil {
			continue // a guess only: the base's own rules are loaded from git
		}
		dir := strings.TrimSuffix(e.Path, ".gitignore")
		out[dir] = ignoreGuess{hash: plumbing.ComputeHash(plumbing.BlobObject, data), list: parseList(string(data), e.Path, dir)}
	}
	return out
}

func guessRules(g map[string]ignoreGuess) map[string]patternList {
	m := make(map[string]patternList, len(g))
	for dir, x := range g {
		m[dir] = x.list
	}
	return m
}

func isGitignore(p string) bool {
	return p == ".gitignore" || strings.HasSuffix(p, "/.gitignore")
}

// loadIgnores reads the .gitignore files of the base tree. They are found
// through the index (hashed, not trusted) corrected by the two tree diffs,
// so no full tree is read. A guessed file with the base's hash is used as
// is; ok says the guesses were exactly the base's files.
func (s *snapshot) loadIgnores(guess map[string]ignoreGuess) (ok bool, err error) {
	files := map[string]objstore.Entry{}
	for i := range s.idx.Entries {
		e := &s.idx.Entries[i]
		if e.Stage == 0 && !e.IntentToAdd && isGitignore(e.Path) {
			files[e.Path] = objstore.Entry{Mode: e.FileMode(), Hash: e.Hash}
		}
	}
	for _, m := range []map[string]objstore.Change{s.headIndex, s.baseHead} {
		for p, c := range m {
			if !isGitignore(p) {
				continue
			}
			if c.From.Mode == 0 {
				delete(files, p)
			} else {
				files[p] = c.From
			}
		}
	}
	s.ignores = map[string]patternList{}
	reused := 0
	for p, e := range files {
		// git reads only regular .gitignore files, never through a symlink.
		if e.Mode != filemode.Regular && e.Mode != filemode.Executable {
			continue
		}
		dir := strings.TrimSuffix(p, ".gitignore")
		if g, ok := guess[dir]; ok && g.hash == e.Hash {
			s.ignores[dir] = g.list
			reused++
			continue
		}
		data, err := s.r.objects().Blob(e.Hash)
		if err != nil {
			return false, objstore.ForPath(err, "read from the base commit", p)
		}
		s.ignores[dir] = parseList(string(data), p, dir)
	}
	return reused == len(s.ignores) && reused == len(guess), nil
}

func (s *snapshot) push(st walk.Stack, dir string) walk.Stack {
	return walk.Push(s.ignores, st, dir)
}

// ignored applies the rules in st to p (walk.Ignored).
func (s *snapshot) ignored(st walk.Stack, p string, isDir bool) bool {
	return walk.Ignored(s.extra, st, p, isDir)
}

// IsIgnored reports whether the guard treats path as ignored: by the
// .gitignore files of the base commit, or by opts.Ignore, or because a parent
// directory is. When the repository cannot be read it answers false, which
// makes the guard report the path rather than skip it.
func (r *Repo) IsIgnored(opts Options, p string, isDir bool) bool {
	s, err := r.snapshotWalk(opts, false)
	if err != nil {
		return false
	}
	return s.isIgnoredPath(strings.Trim(path.Clean(filepath.ToSlash(p)), "/"), isDir)
}

func (s *snapshot) isIgnoredPath(p string, isDir bool) bool {
	if p == "" || p == "." {
		return false
	}
	st := s.push(nil, "")
	parts := strings.Split(p, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		last := i == len(parts)-1
		if s.ignored(st, sub, isDir || !last) {
			return true
		}
		if !last {
			st = s.push(st, sub+"/")
		}
	}
	return false
}

// entryIndex finds the first index entry for p.
func (s *snapshot) entryIndex(p string) int {
	es := s.idx.Entries
	i := sort.Search(len(es), func(i int) bool { return es[i].Path >= p })
	if i < len(es) && es[i].Path == p {
		return i
	}
	return -1
}

// resolveCommits finds HEAD, the base and whether history was rewritten.
func (s *snapshot) resolveCommits(opts Options) error {
	r := s.r
	head, err := r.refStore().Resolve("HEAD")
	switch {
	case err != nil:
		return err
	case head.IsZero():
		s.unborn = true
		s.headTree = objstore.EmptyTree
	default:
		s.headCommit = head
		if s.headTree, err = r.objects().TreeOf(s.headCommit); err != nil {
			return err
		}
	}

	switch {
	case !opts.Base.IsZero():
		s.base, s.baseName = opts.Base, opts.Base.String()[:12]
	default:
		g, err := r.Ref(GatedRef)
		if err != nil {
			return err
		}
		if !g.IsZero() {
			s.base, s.baseName = g, GatedRef
		} else {
			s.base, s.baseName = s.headCommit, "HEAD"
		}
	}
	s.baseTree = objstore.EmptyTree
	if !s.base.IsZero() {
		if s.baseTree, err = r.objects().TreeOf(s.base); err != nil {
			return fmt.Errorf("base: %w", err)
		}
		if s.unborn {
			s.history = true
		} else if s.base != s.headCommit {
			anc, err := r.objects().IsAncestor(s.base, s.headCommit)
			if err != nil {
				return err
			}
			s.history = !anc
		}
	}

	return nil
}

// readIndex reads and parses the index, or takes opts.Preload's read of it.
func (s *snapshot) readIndex(opts Options) error {
	r := s.r
	s.indexPath = opts.IndexFile
	if s.indexPath == "" {
		s.indexPath = filepath.Join(r.gitDir, "index")
	} else if !filepath.IsAbs(s.indexPath) {
		s.indexPath = filepath.Join(r.root, s.indexPath)
	}
	read, ok := opts.Preload.take(s.indexPath)
	if !ok || !s.mapped {
		read = readIndexFile(s.indexPath, r.gitDir, s.mapped)
	}
	s.idx, s.idxMtimeS, s.idxMtimeN = read.idx, read.mtimeS, read.mtimeN
	return read.err
}
