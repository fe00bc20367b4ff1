// Package gittest builds git repositories for tests in t.TempDir(), driving
// the git CLI with a fixed identity, a fixed clock and no system or global
// configuration, so commit hashes are the same on every run.
package gittest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// initIn initialises an empty repository (branch main) in dir, which exists.
func initIn(t TB, dir string) *Repo {
	r := &Repo{t: t, Dir: dir}
	r.Git("init", "-q", "-b", "main")
	return r
}

// Copy makes a repository in a temporary directory that is a copy of the one in dir,
// everything in it (`cp -a`: modes, links and .git whole): a test that needs a
// repository whose making is costly makes it once and copies it.
func Copy(t TB, dir string) *Repo {
	t.Helper()
	r := &Repo{t: t, Dir: t.TempDir()}
	if out, err := exec.Command("cp", "-a", dir+"/.", r.Dir).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s: %v\n%s", dir, err, out)
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
