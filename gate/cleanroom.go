package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/scratch"
)

// envAlways are passed to tasks in the clean room besides clean_room.env: what a command
// needs to be found and to print text, and nothing that changes what it computes.
var envAlways = []string{"PATH", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME"}

// room is where benchmark commands run. In the clean room (the default) it is a fresh
// temporary directory holding exactly the candidate tree, materialized from git objects,
// plus the ignored paths clean_room.carry names (copied, read-only), with a scrubbed
// environment: untracked or ignored files, a stale cache, a gitignored module or a
// GIT_* variable cannot sway a score. Without it, commands run in the repository itself.
//
// Where Landlock is available, every task runs in the sandbox (internal/sandbox): the
// tree is read-only to it except the clean_room.writable folders; its HOME (one per run
// request), its TMPDIR (one per task) and the clean_room.caches folders (shared by every
// run) are the only other places it may write, and nothing it starts outlives it. Each run request (Step 1, Step 2, Step 3, a bench, a
// baseline) is a lane of its own: tasks of the test split never share a writable folder
// with train tasks. A lane reuses the room's tree only while no task can write it.
type room struct {
	dir     string // the project root the commands see (the shared, read-only tree)
	base    string // the temporary folder to remove; "" when not a clean room
	tree    plumbing.Hash
	sandbox bool // tasks run under Landlock
	owner   *Env

	mu      sync.Mutex
	claimed bool // a lane whose tasks may write took the shared tree
}

// openRoom prepares the place to run the candidate tree. The caller must close it.
func (e *Env) openRoom(tree plumbing.Hash) (*room, error) {
	root := e.Repo.Root()
	if !e.CleanRoom {
		return &room{dir: root, owner: e}, nil
	}
	base, err := e.tempDir("room-")
	if err != nil {
		return nil, fmt.Errorf("clean room: %w", err)
	}
	r := &room{dir: filepath.Join(base, "repo"), base: base, tree: tree, sandbox: e.sandboxed(), owner: e}
	if err := e.materialize(tree, r.dir); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// openVerifiedRoom is openRoom for a command that runs the benchmark after prepare: the
// carried paths in the room must be those the ledger accepted (verifyCarry).
func (e *Env) openVerifiedRoom(tree plumbing.Hash) (*room, error) {
	rm, err := e.openRoom(tree)
	if err != nil {
		return nil, err
	}
	if err := e.verifyCarry(rm.dir); err != nil {
		rm.close()
		return nil, err
	}
	return rm, nil
}

// materialize writes the tree and the carried paths into dir.
func (e *Env) materialize(tree plumbing.Hash, dir string) error {
	if err := e.Repo.Materialize(tree, dir); err != nil {
		return fmt.Errorf("clean room: %w", err)
	}
	root := e.Repo.Root()
	for _, p := range e.Config.CleanRoom.Carry {
		if err := carry(filepath.Join(root, filepath.FromSlash(p)), filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return fmt.Errorf("clean room: carry %s: %w", p, err)
		}
	}
	return nil
}

// sandboxAvailable is sandbox.Available; tests replace it to see the fallback.
var sandboxAvailable = sandbox.Available

// sandboxed reports whether tasks can run under Landlock, warning once per Env when not.
func (e *Env) sandboxed() bool {
	if !e.sandboxChecked {
		e.sandboxChecked = true
		_, err := sandboxAvailable()
		e.sandboxOK = err == nil
		if err != nil {
			fmt.Fprintf(e.log(), "hgate: warning: no Landlock in this kernel: benchmark tasks run unsandboxed (%v)\n", err)
		}
	}
	return e.sandboxOK
}

// tempDir makes a private temporary folder (a clean room, the baseline's traces) with a
// random name and mode 0700, inside a folder of this process that is just as random, so
// nothing can guess where a room will be and wait for it there. An empty marker folder
// in it names the repository (by hash): the first call of a process removes what a
// killed hgate left behind for the same repository (the repository lock keeps runs
// apart). releaseTemp removes the process's folder once it holds nothing else.
func (e *Env) tempDir(prefix string) (string, error) {
	marker := ownerMarker(e.Repo.Root())
	if !e.swept {
		sweep(os.TempDir(), marker)
		e.swept = true
	}
	if e.tmpParent == "" {
		parent, err := scratch.MkdirTemp("", "hgate-")
		if err != nil {
			return "", err
		}
		if err := os.Mkdir(filepath.Join(parent, marker), 0o700); err != nil {
			os.RemoveAll(parent)
			return "", err
		}
		e.tmpParent = parent
	}
	return os.MkdirTemp(e.tmpParent, prefix)
}

// releaseTemp removes this process's temporary folder when only its marker is left.
func (e *Env) releaseTemp() {
	if e.tmpParent == "" {
		return
	}
	entries, err := os.ReadDir(e.tmpParent)
	if err == nil && len(entries) == 1 && entries[0].Name() == ownerMarker(e.Repo.Root()) {
		benchmark.RemoveAll(e.tmpParent)
		e.tmpParent = ""
	}
}

// ownerMarker names the folder that marks a temporary folder as serving root.
func ownerMarker(root string) string {
	sum := sha256.Sum256([]byte(root))
	return "owner-" + hex.EncodeToString(sum[:8])
}

// sweep removes the temporary folders of earlier runs that hold marker: those whose
// maker is provably gone (scratch.Orphaned), never a running hgate's, and those of an
// hgate from before folders named their maker.
func sweep(tmp, marker string) {
	matches, _ := filepath.Glob(filepath.Join(tmp, "hgate-*"))
	for _, dir := range matches {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, marker)); err != nil || !fi.IsDir() {
			continue
		}
		name := filepath.Base(dir)
		if _, _, tagged := proc.ParseTag(strings.TrimPrefix(name, "hgate-")); !tagged || scratch.Orphaned(name, "hgate-") {
			scratch.RemoveAll(dir)
		}
	}
}

// close removes the clean room, making the read-only carried paths writable first, and
// this process's temporary folder once nothing else is in it.
func (r *room) close() {
	if r.base != "" {
		benchmark.RemoveAll(r.base)
	}
	// prepare's baseline traces may have opened this process's folder even
	// without a clean room.
	if r.owner != nil {
		r.owner.releaseTemp()
	}
}

// runner builds a benchmark runner for one run request in this room: a lane with its
// own HOME, a private TMPDIR per task, the clean_room.caches variables, and (in the
// sandbox) write access to nothing else but the clean_room.writable folders of its tree,
// the caches and the trace folder.
func (r *room) runner(e *Env, pool *benchmark.Pool) (*benchmark.Runner, error) {
	run := e.runner(pool)
	if r.base == "" {
		return run, nil
	}
	lane, err := os.MkdirTemp(r.base, "lane-")
	if err != nil {
		return nil, fmt.Errorf("clean room: %w", err)
	}
	writable := e.Config.CleanRoom.Writable
	dir := r.dir
	if !r.sandbox || len(writable) > 0 {
		// Tasks may write this tree: the first such lane takes the room's, later
		// ones get their own.
		r.mu.Lock()
		shared := !r.claimed
		r.claimed = true
		r.mu.Unlock()
		if !shared {
			dir = filepath.Join(lane, "repo")
			if err := e.materialize(r.tree, dir); err != nil {
				return nil, err
			}
		}
	}
	home := e.Config.CleanRoom.Home
	if home == "" {
		home = filepath.Join(lane, "home")
	}
	tmp := filepath.Join(lane, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("clean room: %w", err)
		}
	}
	run.Dir, run.TempRoot = dir, tmp
	run.Env = scrubEnv(os.Environ(), e.Config.CleanRoom.Env, e.Repo.Root(), home, tmp)
	caches, err := e.caches()
	if err != nil {
		return nil, err
	}
	for _, c := range caches {
		run.Env = append(run.Env, c.env+"="+c.dir)
	}
	if r.sandbox {
		write := []string{home}
		for _, c := range caches {
			write = append(write, c.dir)
		}
		for _, w := range writable {
			p := filepath.Join(dir, filepath.FromSlash(w))
			// The folder may be absent from the tree (a build output) or carried
			// read-only: tasks get it empty or writable.
			if err := os.MkdirAll(p, 0o755); err != nil {
				return nil, fmt.Errorf("clean room: writable %s: %w", w, err)
			}
			if err := os.Chmod(p, 0o755); err != nil {
				return nil, fmt.Errorf("clean room: writable %s: %w", w, err)
			}
			write = append(write, p)
		}
		run.Sandbox = &sandbox.Policy{Write: write}
	}
	return run, nil
}

// CachesDir is where clean_room.caches live, relative to the git common directory:
// outside every worktree (the guard never sees them, and a checkout never
// removes them) and inside .git, which the loop's agent may not write.
const CachesDir = "hgate/caches"

type cache struct{ env, dir string }

// caches creates the clean_room.caches folders that do not exist yet and returns
// them by variable name. A cache is shared by every run request and every run, so
// what a task leaves there (a build output, a download) serves the next one.
func (e *Env) caches() ([]cache, error) {
	names := slices.Sorted(maps.Keys(e.Config.CleanRoom.Caches))
	if len(names) == 0 {
		return nil, nil
	}
	root := filepath.Join(e.Repo.CommonDir(), filepath.FromSlash(CachesDir))
	out := make([]cache, 0, len(names))
	for _, env := range names {
		name := e.Config.CleanRoom.Caches[env]
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("clean room: cache %s: %w", name, err)
		}
		// MkdirAll follows symlinks: one planted on the way would hand tasks write
		// access to wherever it points.
		for p := dir; p != e.Repo.CommonDir(); p = filepath.Dir(p) {
			fi, err := os.Lstat(p)
			if err != nil {
				return nil, fmt.Errorf("clean room: cache %s: %w", name, err)
			}
			if !fi.IsDir() {
				return nil, fmt.Errorf("clean room: cache %s: %s is not a folder (a symlink?); remove it", name, p)
			}
		}
		out = append(out, cache{env: env, dir: dir})
	}
	return out, nil
}

// scrubEnv keeps only the allowed variables, never a GIT_* one, sets HOME and TMPDIR to
// the room's own folders, and drops PATH entries that are relative or inside the
// repository, where the agent could have planted a shim of git or python.
func scrubEnv(environ, allow []string, repoRoot, home, tmp string) []string {
	keep := append(slices.Clone(envAlways), allow...)
	out := []string{"HOME=" + home, "TMPDIR=" + tmp}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !slices.Contains(keep, k) || strings.HasPrefix(k, "GIT_") || k == "HOME" || k == "TMPDIR" {
			continue
		}
		if k == "PATH" {
			v = cleanPath(v, repoRoot)
		}
		out = append(out, k+"="+v)
	}
	return out
}

func cleanPath(path, repoRoot string) string {
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) || dir == repoRoot || strings.HasPrefix(dir, repoRoot+string(filepath.Separator)) {
			continue
		}
		keep = append(keep, dir)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// carry copies src (a file or a folder) to dst and makes the copy read-only. Symlinks are
// copied as links; nothing outside src is read through them.
func carry(src, dst string) error {
	if _, err := os.Lstat(src); err != nil {
		return err
	}
	var dirs []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, target)
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return copyFile(p, target, info.Mode().Perm()&^0o222)
		}
		return nil // sockets, pipes and devices stay behind
	})
	if err != nil {
		return err
	}
	// Folders last, deepest first, so their files could still be created.
	for _, d := range slices.Backward(dirs) {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm)
}
