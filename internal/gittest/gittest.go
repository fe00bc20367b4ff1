// Package gittest builds git repositories for tests in t.TempDir(), driving
// the git CLI with a fixed identity, a fixed clock and no system or global
// configuration, so commit hashes are the same on every run.
package gittest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Env is the environment every git command runs with: hermetic config,
// fixed names and dates. Tests that run git themselves can use it.
func Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=hgate test",
		"GIT_AUTHOR_EMAIL=test@hgate.invalid",
		"GIT_COMMITTER_NAME=hgate test",
		"GIT_COMMITTER_EMAIL=test@hgate.invalid",
		"GIT_AUTHOR_DATE=2024-01-01T00:00:00Z",
		"GIT_COMMITTER_DATE=2024-01-01T00:00:00Z",
		"GIT_TERMINAL_PROMPT=0",
		"XDG_CONFIG_HOME=/nonexistent",
		// No `git maintenance run --auto` after every commit: a process each that finds
		// nothing to do in a test's few objects. A git -c setting still overrides it
		// (initLarge wants the commit's gc); a test's own GIT_CONFIG_COUNT replaces it.
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=maintenance.auto",
		"GIT_CONFIG_VALUE_0=false",
	)
}

// TB is the part of testing.TB the helpers need, so benchmarks can use them.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	TempDir() string
}

var _ TB = (testing.TB)(nil)

// Repo is a repository under construction.
type Repo struct {
	t   TB
	Dir string
}

// New initialises an empty repository (branch main) in a temporary directory.
func New(t TB) *Repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is not installed: %v", err)
	}
	return initIn(t, t.TempDir())
}

// initIn initialises an empty repository (branch main) in dir, which exists and is
// empty: it writes what `git init -q -b main` wrote there the first time (initTree).
func initIn(t TB, dir string) *Repo {
	t.Helper()
	if err := initTree.write(dir); err != nil {
		t.Fatalf("git init: %v", err)
	}
	return &Repo{t: t, Dir: dir}
}

// Copy makes a repository in a temporary directory that is a copy of the one in dir,
// everything in it (as `cp -a`: modes, modification times, links and .git whole; a file's
// hard links inside dir become files of their own): a test that needs a repository whose
// making is costly makes it once and copies it. The copy is made in this process, not by
// a cp process (about 25 ms of CPU each on a small repository).
func Copy(t TB, dir string) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir()}
	if err := copyTree(dir, r.Dir); err != nil {
		t.Fatalf("copy %s: %v", dir, err)
	}
	return r
}

// Path returns the absolute path of a slash path in the repository.
func (r *Repo) Path(p string) string {
	return filepath.Join(r.Dir, filepath.FromSlash(p))
}

// Write creates or replaces a file (and its directories) with content.
func (r *Repo) Write(p, content string) {
	r.t.Helper()
	full := r.Path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatalf("write %s: %v", p, err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatalf("write %s: %v", p, err)
	}
}

// WriteFiles writes several files; keys are paths.
func (r *Repo) WriteFiles(files map[string]string) {
	r.t.Helper()
	for p, c := range files {
		r.Write(p, c)
	}
}

// Remove deletes a file or directory tree.
func (r *Repo) Remove(p string) {
	r.t.Helper()
	if err := os.RemoveAll(r.Path(p)); err != nil {
		r.t.Fatalf("remove %s: %v", p, err)
	}
}

// Symlink creates a symlink at p pointing to target (replacing p).
func (r *Repo) Symlink(target, p string) {
	r.t.Helper()
	full := r.Path(p)
	_ = os.RemoveAll(full)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatalf("symlink %s: %v", p, err)
	}
	if err := os.Symlink(target, full); err != nil {
		r.t.Fatalf("symlink %s: %v", p, err)
	}
}

// Chmod sets a file's permission bits.
func (r *Repo) Chmod(p string, mode os.FileMode) {
	r.t.Helper()
	if err := os.Chmod(r.Path(p), mode); err != nil {
		r.t.Fatalf("chmod %s: %v", p, err)
	}
}

// Git runs git in the repository and returns its stdout; a failure fails
// the test with git's stderr.
func (r *Repo) Git(args ...string) string {
	r.t.Helper()
	out, err := r.TryGit(args...)
	if err != nil {
		r.t.Fatalf("%v", err)
	}
	return out
}

// TryGit runs git and returns its stdout, or an error holding its stderr.
func (r *Repo) TryGit(args ...string) (string, error) {
	return r.GitEnv(nil, args...)
}

// GitEnv runs git with extra environment variables.
func (r *Repo) GitEnv(extra []string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = r.Dir
	cmd.Env = append(Env(), extra...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// Commit stages everything (git add -A) and commits with msg; it returns
// the new commit's hash.
func (r *Repo) Commit(msg string) string {
	r.t.Helper()
	r.Git("add", "-A")
	r.Git("commit", "-q", "--allow-empty", "-m", msg)
	return r.Head()
}

// Head returns HEAD's commit hash.
func (r *Repo) Head() string {
	r.t.Helper()
	if h, ok := readHead(filepath.Join(r.Dir, ".git")); ok {
		return h
	}
	return strings.TrimSpace(r.Git("rev-parse", "HEAD"))
}

// Sh runs a shell command line in the repository with the hermetic git
// environment and returns its combined output.
func (r *Repo) Sh(script string) (string, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = r.Dir
	cmd.Env = Env()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// tree is a folder's content held in memory: what `git init` writes, taken once.
type tree []treeFile

type treeFile struct {
	rel  string // slash path under the folder
	mode fs.FileMode
	data []byte
}

// initTree is what `git init -q -b main` writes into an empty folder, read from one real
// git init per test process: New writes it again instead of starting git each time.
var initTree = lazyTree{init: func() (tree, error) {
	dir, err := os.MkdirTemp("", "gittest-init-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("git", "init", "-q", "-b", "main")
	cmd.Dir, cmd.Env = dir, Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, errors.New(strings.TrimSpace(string(out)))
	}
	return readTree(dir)
}}

type lazyTree struct {
	once sync.Once
	init func() (tree, error)
	t    tree
	err  error
}

// write writes the tree into dir, which exists.
func (l *lazyTree) write(dir string) error {
	l.once.Do(func() { l.t, l.err = l.init() })
	if l.err != nil {
		return l.err
	}
	for _, f := range l.t {
		p := filepath.Join(dir, filepath.FromSlash(f.rel))
		var err error
		if f.mode.IsDir() {
			err = os.Mkdir(p, f.mode.Perm())
		} else {
			err = os.WriteFile(p, f.data, f.mode.Perm())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readTree reads dir's folders and regular files, parents first.
func readTree(dir string) (tree, error) {
	var t tree
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		f := treeFile{rel: filepath.ToSlash(rel), mode: info.Mode()}
		switch {
		case d.IsDir():
		case info.Mode().IsRegular():
			if f.data, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return errors.New(p + ": neither a folder nor a regular file")
		}
		t = append(t, f)
		return nil
	})
	return t, err
}

// copyTree copies src's content into the existing folder dst as cp -a would: folders,
// regular files and symbolic links with their permissions and modification times
// (folders' last, once their content is written; read-only folders made so last).
func copyTree(src, dst string) error {
	type dir struct {
		path string
		info fs.FileInfo
	}
	var dirs []dir
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, dir{to, info})
			if p == src {
				return nil
			}
			return os.Mkdir(to, 0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case info.Mode().IsRegular():
			if err := copyFile(p, to, info.Mode().Perm()); err != nil {
				return err
			}
			return os.Chtimes(to, info.ModTime(), info.ModTime())
		}
		return errors.New(p + ": not a folder, a regular file or a symbolic link")
	})
	for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
		if err = os.Chmod(dirs[i].path, dirs[i].info.Mode().Perm()); err == nil {
			err = os.Chtimes(dirs[i].path, dirs[i].info.ModTime(), dirs[i].info.ModTime())
		}
	}
	return err
}

// copyFile copies the regular file src to the new file dst with permissions perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err = io.Copy(out, in); err == nil {
		err = out.Chmod(perm) // past the umask, as cp -a
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// readHead resolves HEAD in the .git folder gitDir from its files (HEAD, a loose ref or
// packed-refs), as rev-parse would for a repository New or Copy made; false when it cannot
// (not a folder, no commit yet, another ref storage), and the caller asks git.
func readHead(gitDir string) (string, bool) {
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return "", false
	}
	ref, sym := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
	if !sym {
		return ref, isHash(ref)
	}
	if !strings.HasPrefix(ref, "refs/") || strings.Contains(ref, "..") {
		return "", false
	}
	if data, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(ref))); err == nil {
		h := strings.TrimSpace(string(data))
		return h, isHash(h)
	}
	packed, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		return "", false
	}
	for _, line := range bytes.Split(packed, []byte("\n")) {
		if h, name, ok := strings.Cut(string(line), " "); ok && name == ref {
			return h, isHash(h)
		}
	}
	return "", false
}

// isHash says whether s is a full SHA-1 or SHA-256 object name in lower-case hex.
func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// Fsck runs git fsck with args and returns its output, or an error holding its stderr.
// git fsck also starts `git commit-graph verify` and `git multi-pack-index verify`, two
// processes that find nothing to check in a repository with neither file; where the
// repository has neither, they are turned off (core.commitGraph, core.multiPackIndex),
// and fsck checks the same objects and refs with one process.
func (r *Repo) Fsck(args ...string) (string, error) {
	objects := filepath.Join(r.Dir, ".git", "objects")
	var off []string
	if fi, err := os.Stat(objects); err != nil || !fi.IsDir() {
		return r.TryGit(append([]string{"fsck"}, args...)...) // a linked worktree: ask git as is
	}
	if !exists(filepath.Join(objects, "info", "commit-graph")) && !exists(filepath.Join(objects, "info", "commit-graphs")) {
		off = append(off, "-c", "core.commitGraph=false")
	}
	if !exists(filepath.Join(objects, "pack", "multi-pack-index")) {
		off = append(off, "-c", "core.multiPackIndex=false")
	}
	return r.TryGit(append(append(off, "fsck"), args...)...)
}

// exists says whether path names something (not following a final link).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
