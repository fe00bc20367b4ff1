package gitguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

func open(t *testing.T, r *gittest.Repo) *gitguard.Repo {
	t.Helper()
	g, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestOpen(t *testing.T) {
	r := newProject(t)
	g, err := gitguard.Open(r.Path("agent"))
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(r.Dir)
	if got, _ := filepath.EvalSymlinks(g.Root()); got != root {
		t.Errorf("root %s, want %s", got, root)
	}
	c, tree, err := g.Head()
	if err != nil || c.String() != r.Head() || tree.String() != strings.TrimSpace(r.Git("rev-parse", "HEAD^{tree}")) {
		t.Errorf("head %s %s %v", c, tree, err)
	}

	if _, err := gitguard.Open(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no .git found") {
		t.Errorf("open outside a repository: %v", err)
	}
}

// go-git cannot read what a repository extension changes (object format, ref
// storage, per-worktree config): such a repository is refused, not misread.
func TestOpenRefusesExtensions(t *testing.T) {
	r := newProject(t)
	r.Git("config", "core.repositoryFormatVersion", "1")
	r.Git("config", "extensions.noop", "true")
	open(t, r)
	r.Git("config", "extensions.worktreeConfig", "true")
	_, err := gitguard.Open(r.Dir)
	if err == nil || !strings.HasSuffix(err.Error(), ": unsupported repository extension: worktreeconfig") {
		t.Errorf("open: %v", err)
	}
	r.Git("config", "core.repositoryFormatVersion", "2")
	_, err = gitguard.Open(r.Dir)
	if err == nil || !strings.HasSuffix(err.Error(), ": core.repositoryformatversion 2 is not supported") {
		t.Errorf("open: %v", err)
	}
}

func TestOpenLinkedWorktree(t *testing.T) {
	r := newProject(t)
	wt := filepath.Join(t.TempDir(), "wt")
	r.Git("worktree", "add", "-q", wt)
	if err := os.WriteFile(filepath.Join(wt, "benchmark.py"), []byte("score = 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := gitguard.Open(wt)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := g.Check(gitguard.Options{Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(vs); got != "benchmark.py:modified\n" {
		t.Errorf("got %s", got)
	}
}

// A missing or corrupt index is an error, never "no changes".
func TestCheckBrokenRepository(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(r *gittest.Repo)
		want   string
	}{
		{"missing index", func(r *gittest.Repo) { r.Remove(".git/index") }, "read index"},
		{"truncated index", func(r *gittest.Repo) {
			b, _ := os.ReadFile(r.Path(".git/index"))
			os.WriteFile(r.Path(".git/index"), b[:len(b)/2], 0o644)
		}, "index is corrupt"},
		{"flipped byte", func(r *gittest.Repo) {
			b, _ := os.ReadFile(r.Path(".git/index"))
			b[40] ^= 0xff
			os.WriteFile(r.Path(".git/index"), b, 0o644)
		}, "checksum mismatch"},
		{"missing HEAD commit", func(r *gittest.Repo) {
			r.Write(".git/refs/heads/main", strings.Repeat("1", 40)+"\n")
		}, "read commit"},
		{"split index without its shared index", func(r *gittest.Repo) {
			r.Git("update-index", "--split-index")
			shared, _ := filepath.Glob(r.Path(".git/sharedindex.*"))
			for _, f := range shared {
				os.Remove(f)
			}
		}, "split index: read its shared index"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newProject(t)
			tc.break_(r)
			g, err := gitguard.Open(r.Dir)
			if err == nil {
				_, err = g.Check(gitguard.Options{Allow: allow})
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestIndexFileOption(t *testing.T) {
	r := newProject(t)
	// A temporary index as `git commit -a` builds it.
	r.Write("benchmark.py", "score = 2\n")
	if _, err := r.GitEnv([]string{"GIT_INDEX_FILE=.git/tmp-index"}, "read-tree", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.GitEnv([]string{"GIT_INDEX_FILE=.git/tmp-index"}, "add", "benchmark.py"); err != nil {
		t.Fatal(err)
	}
	r.Git("checkout", "-q", "--", "benchmark.py")
	if vs := check(t, r, gitguard.Options{}); len(vs) != 0 {
		t.Fatalf("the real index is clean, got %s", summary(vs))
	}
	vs := check(t, r, gitguard.Options{IndexFile: ".git/tmp-index"})
	if got := summary(vs); got != "benchmark.py:modified\n" || !strings.Contains(vs[0].Detail, "staged") {
		t.Fatalf("got %s %+v", got, vs)
	}
}

func TestRefs(t *testing.T) {
	r := newProject(t)
	g := open(t, r)
	head := plumbing.NewHash(r.Head())
	if h, err := g.Ref(gitguard.GatedRef); err != nil || !h.IsZero() {
		t.Fatalf("absent ref: %s %v", h, err)
	}
	if err := g.SetRef(gitguard.GatedRef, head, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(r.Git("rev-parse", gitguard.GatedRef)); got != head.String() {
		t.Fatalf("git sees %s", got)
	}
	// Creating again with a zero old value loses the race.
	if err := g.SetRef(gitguard.GatedRef, head, plumbing.ZeroHash); !errors.Is(err, gitguard.ErrRefChanged) {
		t.Fatalf("create over existing: %v", err)
	}
	r.Write("agent/agent.py", "v2\n")
	next := plumbing.NewHash(r.Commit("next"))
	wrong := plumbing.NewHash(strings.Repeat("2", 40))
	if err := g.SetRef(gitguard.GatedRef, next, wrong); !errors.Is(err, gitguard.ErrRefChanged) {
		t.Fatalf("stale old: %v", err)
	}
	if err := g.SetRef(gitguard.GatedRef, next, head); err != nil {
		t.Fatal(err)
	}
	if h, _ := g.Ref(gitguard.GatedRef); h != next {
		t.Fatalf("ref %s, want %s", h, next)
	}
	paths, err := g.ChangedPaths(head, next)
	if err != nil || strings.Join(paths, ",") != "agent/agent.py" {
		t.Fatalf("changed paths %v %v", paths, err)
	}
	if err := g.SetRef(gitguard.GatedRef, plumbing.ZeroHash, next); err != nil {
		t.Fatal(err)
	}
	if h, _ := g.Ref(gitguard.GatedRef); !h.IsZero() {
		t.Fatalf("deleted ref still %s", h)
	}
}

// writeTree is git's answer: HEAD plus `git add -A` of the allowed paths,
// in a fresh index.
func writeTree(t *testing.T, r *gittest.Repo, paths ...string) string {
	t.Helper()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(t.TempDir(), "index")}
	must := func(args ...string) string {
		out, err := r.GitEnv(env, args...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	must("read-tree", "HEAD")
	must(append([]string{"add", "-A", "--"}, paths...)...)
	return strings.TrimSpace(must("write-tree"))
}

func TestCandidateTree(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(r *gittest.Repo)
		paths []string // what git add -A is given
	}{
		{"unchanged", func(r *gittest.Repo) {}, []string{"agent/agent.py"}},
		{"modified", func(r *gittest.Repo) { r.Write("agent/agent.py", "print('v2')\n") }, []string{"agent/agent.py"}},
		{"added in allowed dir", func(r *gittest.Repo) {
			r.Write("notes/deep/new.md", "n\n")
			r.Write("notes/x.log", "ignored\n")
		}, []string{"notes"}},
		{"deleted", func(r *gittest.Repo) { r.Remove("notes/idea.md") }, []string{"notes"}},
		{"executable", func(r *gittest.Repo) { r.Chmod("agent/agent.py", 0o755) }, []string{"agent/agent.py"}},
		{"forbidden changes stay out", func(r *gittest.Repo) {
			r.Write("agent/agent.py", "print('v3')\n")
			r.Write("benchmark.py", "score = 100\n")
			r.Git("add", "benchmark.py")
			r.Write("stray.txt", "x\n")
		}, []string{"agent/agent.py"}},
		{"staged then edited", func(r *gittest.Repo) {
			r.Write("PROGRAM.md", "staged\n")
			r.Git("add", "PROGRAM.md")
			r.Write("PROGRAM.md", "on disk\n")
		}, []string{"PROGRAM.md"}},
		{"whole allowed dir removed", func(r *gittest.Repo) { r.Remove("notes") }, []string{"notes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newProject(t)
			tc.edit(r)
			g := open(t, r)
			got, err := g.CandidateTree(gitguard.Options{Allow: allow})
			if err != nil {
				t.Fatal(err)
			}
			if want := writeTree(t, r, tc.paths...); got.String() != want {
				t.Fatalf("candidate %s, git write-tree %s\n%s", got, want, r.Git("diff", "--stat", want, got.String()))
			}
			// git can read every object the candidate stored.
			r.Git("ls-tree", "-r", got.String())
		})
	}
}

func TestMaterialize(t *testing.T) {
	r := newProject(t)
	r.Chmod("tasks/t1/check.sh", 0o755)
	r.Symlink("agent.py", "agent/link.py")
	r.Commit("more")
	g := open(t, r)
	_, tree, err := g.Head()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "room")
	if err := g.Materialize(tree, dir); err != nil {
		t.Fatal(err)
	}
	checkFile := func(p, content string, mode os.FileMode) {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), mode)
		}
		if content != "" {
			if b, _ := os.ReadFile(filepath.Join(dir, p)); string(b) != content {
				t.Errorf("%s: %q", p, b)
			}
		}
	}
	checkFile("benchmark.py", "score = 1\n", 0o644)
	checkFile("tasks/t1/check.sh", "exit 0\n", 0o755)
	checkFile("agent/link.py", "", os.ModeSymlink|0o777)
	if _, err := os.Lstat(filepath.Join(dir, "workspace")); err == nil {
		t.Error("ignored workspace/ was materialized")
	}
	if err := g.Materialize(tree, dir); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("second materialize: %v", err)
	}
}

// Applying each hint, as a user would, clears the violation.
func TestHintsRevert(t *testing.T) {
	tests := []struct {
		name  string
		gated bool
		edit  func(r *gittest.Repo)
	}{
		{"modified", false, func(r *gittest.Repo) { r.Write("benchmark.py", "x\n") }},
		{"staged", false, func(r *gittest.Repo) { r.Write("benchmark.py", "x\n"); r.Git("add", "benchmark.py") }},
		{"deleted", false, func(r *gittest.Repo) { r.Remove("benchmark.py") }},
		{"staged deletion kept on disk", false, func(r *gittest.Repo) { r.Git("rm", "-q", "--cached", "benchmark.py") }},
		{"untracked", false, func(r *gittest.Repo) { r.Write("tasks/t9/check.sh", "x\n") }},
		{"added in index", false, func(r *gittest.Repo) { r.Write("new.py", "x\n"); r.Git("add", "new.py") }},
		{"added then deleted on disk", false, func(r *gittest.Repo) {
			r.Write("new.py", "x\n")
			r.Git("add", "new.py")
			r.Remove("new.py")
		}},
		{"mode with fileMode off", false, func(r *gittest.Repo) {
			r.Git("config", "core.fileMode", "false")
			r.Chmod("benchmark.py", 0o755)
		}},
		{"symlink", false, func(r *gittest.Repo) { r.Symlink("/etc/passwd", "benchmark.py") }},
		{"file became a directory", false, func(r *gittest.Repo) {
			r.Remove("agent/agent.py")
			r.Write("agent/agent.py/x.py", "x\n")
		}},
		{"nested repository", false, func(r *gittest.Repo) {
			r.Write("notes/sub/a.md", "x\n")
			r.Git("-C", "notes/sub", "init", "-q")
		}},
		{"committed modification", true, func(r *gittest.Repo) { r.Write("benchmark.py", "x\n"); r.Commit("c") }},
		{"committed addition", true, func(r *gittest.Repo) { r.Write("new.py", "x\n"); r.Commit("c") }},
		{"committed deletion", true, func(r *gittest.Repo) { r.Remove("benchmark.py"); r.Commit("c") }},
		{"renamed", false, func(r *gittest.Repo) {
			os.Rename(r.Path("benchmark.py"), r.Path("bench2.py"))
		}},
		{"history rewritten", true, func(r *gittest.Repo) {
			r.Write("agent/agent.py", "v2\n")
			r.Git("add", "-A")
			r.Git("commit", "-q", "--amend", "-m", "init again")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newProject(t)
			if tc.gated {
				r.Git("update-ref", gitguard.GatedRef, "HEAD")
			}
			tc.edit(r)
			for round := 0; round < 3; round++ {
				vs := check(t, r, gitguard.Options{})
				if len(vs) == 0 {
					if round == 0 {
						t.Fatal("edit produced no violation")
					}
					return
				}
				for _, v := range vs {
					if v.Hint == "" {
						t.Fatalf("no hint for %+v", v)
					}
					if out, err := r.Sh(v.Hint); err != nil {
						t.Fatalf("hint %q for %+v failed: %v\n%s", v.Hint, v, err, out)
					}
				}
			}
			t.Fatalf("violations remain after applying hints: %+v", check(t, r, gitguard.Options{}))
		})
	}
}

// A short id, as results.tsv keeps them, finds its commit; a blob's id, an unknown
// one or one that is not hex finds none.
func TestCommitByPrefix(t *testing.T) {
	r := newProject(t)
	g := open(t, r)
	head := r.Head()
	for _, p := range []string{head[:7], head[:8], head, strings.ToUpper(head[:9])} {
		if h, err := g.CommitByPrefix(p); err != nil || h.String() != head {
			t.Errorf("%s: %s %v, want %s", p, h, err, head)
		}
	}
	blob := strings.TrimSpace(r.Git("rev-parse", "HEAD:benchmark.py"))
	for _, p := range []string{blob[:10], "0000000", "xyz1234", ""} {
		if h, err := g.CommitByPrefix(p); !errors.Is(err, plumbing.ErrObjectNotFound) {
			t.Errorf("%q: %s %v, want no commit", p, h, err)
		}
	}
}
