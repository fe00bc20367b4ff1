package gitrun_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/gitguard/gitrun"
	"github.com/hgate/hgate/internal/gittest"
)

func newRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	r := gittest.New(t)
	r.Write("a.txt", "a\n")
	r.Commit("init")
	return r
}

func runner(t *testing.T, r *gittest.Repo) (*gitrun.Runner, error) {
	t.Helper()
	g := filepath.Join(r.Dir, ".git")
	return gitrun.New(g, g, r.Dir)
}

// appendConfig adds text to the repository's config, as an agent's plant would.
func appendConfig(t *testing.T, r *gittest.Repo, text string) {
	t.Helper()
	f, err := os.OpenFile(r.Path(".git/config"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// Every key that can make git run a command or change content stops the runner before
// any git of the repository runs, named with its line; the command never ran.
func TestRefusesKeys(t *testing.T) {
	for _, tc := range []struct{ plant, key string }{
		{"[filter \"x\"]\n\tsmudge = touch MARKER\n\tclean = touch MARKER\n", "filter.x.smudge"},
		{"[core]\n\tfsmonitor = touch MARKER\n", "core.fsmonitor"},
		{"[core]\n\thooksPath = /tmp\n", "core.hookspath"},
		{"[include]\n\tpath = /tmp/evil\n", "include.path"},
		{"[includeIf \"gitdir:/\"]\n\tpath = /tmp/evil\n", "includeif.gitdir:/.path"},
		{"[diff \"x\"]\n\ttextconv = touch MARKER\n", "diff.x.textconv"},
		{"[merge \"x\"]\n\tdriver = touch MARKER\n", "merge.x.driver"},
		{"[core]\n\tsshCommand = touch MARKER\n", "core.sshcommand"},
		{"[core]\n\tworktree = /tmp\n", "core.worktree"},
		{"[core]\n\tautocrlf = true\n", "core.autocrlf"},
		{"[alias]\n\tst = !touch MARKER\n", "alias.st"},
		{"[core.x]\n\tfoo = bar\n", "core.x.foo"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			r := newRepo(t)
			marker := filepath.Join(t.TempDir(), "marker")
			appendConfig(t, r, strings.ReplaceAll(tc.plant, "MARKER", marker))
			_, err := runner(t, r)
			if err == nil || !strings.Contains(err.Error(), tc.key+" (line ") {
				t.Fatalf("New: %v; want a refusal naming %s and its line", err, tc.key)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the planted command ran")
			}
		})
	}
}

// What git init and the usual porcelain write is accepted.
func TestAllowsUsualConfig(t *testing.T) {
	r := newRepo(t)
	r.Git("config", "user.name", "Someone")
	r.Git("remote", "add", "origin", "https://example.invalid/x.git")
	r.Git("config", "branch.main.remote", "origin")
	if _, err := runner(t, r); err != nil {
		t.Fatal(err)
	}
}

// A change to the config after the anchor stops the next git process, naming what was
// added; an allowed key too (nothing changes behind hgate's back), and the change's
// command never runs.
func TestChangeStops(t *testing.T) {
	r := newRepo(t)
	g, err := runner(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Run("rev-parse", "HEAD"); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "marker")
	appendConfig(t, r, "[core]\n\tfsmonitor = touch "+marker+"\n")
	_, _, err = g.Run("status", "--porcelain")
	var ce *gitrun.ChangedError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "core.fsmonitor") {
		t.Fatalf("Run after a plant: %v; want a ChangedError naming core.fsmonitor", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the planted fsmonitor ran")
	}
	if g.Check() == nil {
		t.Fatal("Check after a plant: nil")
	}

	r2 := newRepo(t)
	g2, err := runner(t, r2)
	if err != nil {
		t.Fatal(err)
	}
	r2.Git("config", "user.email", "x@example.invalid")
	if err := g2.Check(); err == nil || !strings.Contains(err.Error(), "added user.email") {
		t.Fatalf("Check after git config user.email: %v", err)
	}
}

// A driver or conversion in info/attributes is refused; a planted one later stops too.
func TestAttributes(t *testing.T) {
	r := newRepo(t)
	if err := os.WriteFile(r.Path(".git/info/attributes"), []byte("# ok\n*.txt filter=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runner(t, r); err == nil || !strings.Contains(err.Error(), "filter=x (line 2)") {
		t.Fatalf("New: %v", err)
	}
	r2 := newRepo(t)
	g, err := runner(t, r2)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r2.Path(".git/info/attributes"), []byte("[attr]evil filter=x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Run("rev-parse", "HEAD"); err == nil || !strings.Contains(err.Error(), "info/attributes") {
		t.Fatalf("Run after an attributes plant: %v", err)
	}
}

// Nothing of hgate's environment reaches git: not GIT_DIR, not GIT_CONFIG_*, not a
// global config under HOME or XDG_CONFIG_HOME, not GIT_EXEC_PATH.
func TestEnvironment(t *testing.T) {
	r := newRepo(t)
	decoy := gittest.New(t)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(home, ".gitconfig"), filepath.Join(home, "git", "config")} {
		if err := os.WriteFile(f, []byte("[user]\n\tname = from-home\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, err := runner(t, r)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_DIR", filepath.Join(decoy.Dir, ".git"))
	t.Setenv("GIT_WORK_TREE", decoy.Dir)
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_CONFIG_KEY_0", "user.name")
	t.Setenv("GIT_CONFIG_VALUE_0", "from-env")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'user.name'='from-params'")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(home, ".gitconfig"))
	t.Setenv("GIT_CONFIG_NOSYSTEM", "")
	t.Setenv("GIT_EXEC_PATH", t.TempDir())
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", home)
	out, _, err := g.Run("rev-parse", "--absolute-git-dir")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(r.Dir, ".git"); out != want {
		t.Errorf("git dir %q, want %q", out, want)
	}
	if out, code, err := g.Run("config", "user.name"); code != 1 || out != "" {
		t.Errorf("user.name = %q (exit %d, %v): some of hgate's environment reached git", out, code, err)
	}
	if out, _, _ := g.Run("config", "core.hooksPath"); out != "/dev/null" {
		t.Errorf("core.hooksPath = %q, want /dev/null", out)
	}
}

// A git in a folder of the repository on PATH (an allowed folder the agent may write,
// added to PATH by direnv's PATH_add) is never the one hgate runs: it would run as the
// user, outside every sandbox. The real git on PATH after it is.
func TestGitNotFromTheRepository(t *testing.T) {
	r := newRepo(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	bin := r.Path("bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	plant := "#!/bin/sh\necho planted > " + ran + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(plant), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+filepath.Dir(real))
	g, err := runner(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Run("rev-parse", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatalf("hgate ran the git planted in the repository (%s)", filepath.Join(bin, "git"))
	}
	// With no other git on PATH there is none.
	t.Setenv("PATH", bin)
	if _, err := runner(t, r); !errors.Is(err, gitrun.ErrNoGit) {
		t.Fatalf("only the repository's git on PATH: got %v, want ErrNoGit", err)
	}
}

// TestGitChangedThroughAnotherName: the git found on PATH has another name a sandboxed
// agent may write (a hard link in a loop.sandbox.writable folder, which the loop's PATH
// check, comparing paths, cannot see). Rewritten through that name, it is never started:
// the next git hgate would run stops with an error naming it, and a later hgate that
// finds that same file refuses it.
func TestGitChangedThroughAnotherName(t *testing.T) {
	r := newRepo(t)
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH")
	}
	base := t.TempDir()
	bin, sdk, ran := filepath.Join(base, "bin"), filepath.Join(base, "sdk"), filepath.Join(base, "ran")
	os.Mkdir(bin, 0o755)
	os.Mkdir(sdk, 0o755)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(bin, "git"), filepath.Join(sdk, "git")); err != nil {
		t.Skip("no hard links here:", err)
	}
	t.Setenv("PATH", bin)
	g, err := runner(t, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Run("rev-parse", "HEAD"); err != nil {
		t.Fatal(err)
	}
	// The agent's phase: sdk/git rewritten in place (the same file as bin/git).
	f, err := os.OpenFile(filepath.Join(sdk, "git"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("#!/bin/sh\necho planted > " + ran + "\nexec " + real + " \"$@\"\n")
	f.Close()
	_, _, err = g.Run("rev-parse", "HEAD")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(bin, "git")+", a program hgate runs as you outside every sandbox, changed while hgate ran") {
		t.Fatalf("the changed git: %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("hgate ran the git the agent rewrote")
	}
	// The next hgate (a new run, a --resume) finds the same changed git: refused too.
	if _, err := runner(t, r); err == nil || !strings.Contains(err.Error(), "changed while an earlier hgate ran") {
		t.Fatalf("the next runner: %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Fatal("the next hgate ran the git the agent rewrote")
	}
	// Reinstalled (another file at its path): it runs again.
	next := filepath.Join(bin, "git.new")
	os.WriteFile(next, []byte("#!/bin/sh\nexec "+real+" \"$@\"\n"), 0o755)
	if err := os.Rename(next, filepath.Join(bin, "git")); err != nil {
		t.Fatal(err)
	}
	if g, err = runner(t, r); err != nil {
		t.Fatal(err)
	}
	if _, _, err := g.Run("rev-parse", "HEAD"); err != nil {
		t.Fatal(err)
	}
}
