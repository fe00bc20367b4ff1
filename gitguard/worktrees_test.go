package gitguard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// A linked worktree made by Worktrees.Add holds the commit's files, written by hgate
// (git status finds it clean, so the index is right too); Candidate commits what was
// changed there without git add, leaves out what the base ignores, refuses a fifo unread;
// PlaceTree puts a tree in the main worktree with the index left at HEAD.
func TestWorktreesRoundTrip(t *testing.T) {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{"a.txt": "a\n", "bin/run.sh": "exit 0\n", "sub/dir/b.txt": "b\n", ".gitignore": "ignored/\n"})
	r.Chmod("bin/run.sh", 0o755)
	r.Symlink("a.txt", "link")
	head := plumbing.NewHash(r.Commit("init"))
	repo, w := openWorktrees(t, r.Dir)
	dir := filepath.Join(t.TempDir(), "wt")
	if err := w.Add(dir, head, 0); err != nil {
		t.Fatal(err)
	}
	wt := &gittest.Repo{Dir: dir}
	if out, err := (&gittest.Repo{Dir: dir}).Sh("git status --porcelain"); err != nil || out != "" {
		t.Fatalf("git status in the new worktree: %q %v; want clean", out, err)
	}
	if fi, err := os.Stat(wt.Path("bin/run.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("bin/run.sh: %v %v; want executable", fi, err)
	}
	if l, err := os.Readlink(wt.Path("link")); err != nil || l != "a.txt" {
		t.Errorf("link: %q %v", l, err)
	}

	opts := gitguard.Options{}
	if c, unread, err := w.Candidate(dir, head, opts, "m\n", loopAuthor); err != nil || !c.IsZero() || unread != nil {
		t.Fatalf("Candidate of an untouched worktree: %v %v %v", c, unread, err)
	}
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(wt.Path(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(wt.Path(p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.txt", "changed\n")
	write("c.txt", "new\n")
	write("ignored/x", "hidden\n")
	if err := syscall.Mkfifo(wt.Path("pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, unread, err := w.Candidate(dir, head, opts, "m\n", loopAuthor)
	if err != nil || !c.IsZero() || len(unread) != 1 || !strings.Contains(unread[0], "pipe is a fifo") {
		t.Fatalf("Candidate with a fifo: %v %q %v; want it refused unread", c, unread, err)
	}
	os.Remove(wt.Path("pipe"))
	c, unread, err = w.Candidate(dir, head, opts, "m\n", loopAuthor)
	if err != nil || c.IsZero() || unread != nil {
		t.Fatalf("Candidate: %v %v %v", c, unread, err)
	}
	files := r.Git("ls-tree", "-r", "--name-only", c.String())
	if !strings.Contains(files, "c.txt\n") || strings.Contains(files, "ignored") {
		t.Errorf("candidate's files:\n%s", files)
	}
	if p := strings.TrimSpace(r.Git("rev-parse", c.String()+"^")); p != head.String() {
		t.Errorf("candidate's parent %s, want %s", p, head)
	}

	merged, conflict, err := w.Merge(head, c)
	tree, _ := repo.TreeOf(c)
	if err != nil || conflict || merged != tree {
		t.Fatalf("Merge onto its own base: %v %v %v; want the candidate's tree", merged, conflict, err)
	}
	if err := repo.PlaceTree(tree, 0); err != nil {
		t.Fatal(err)
	}
	if got := r.Git("status", "--porcelain"); got != " M a.txt\n?? c.txt\n" {
		t.Errorf("git status after PlaceTree:\n%s", got)
	}
	if err := w.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := w.Prune(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("worktree still there: %v", err)
	}
}

// The worktree is found by git's own record of it, not through its .git file, which an
// agent could point at a repository of its own.
func TestWorktreesIgnoreDotGitFile(t *testing.T) {
	r := gittest.New(t)
	r.Write("a.txt", "a\n")
	head := plumbing.NewHash(r.Commit("init"))
	decoy := gittest.New(t)
	decoy.Write("a.txt", "decoy\n")
	decoy.Commit("decoy")
	_, w := openWorktrees(t, r.Dir)
	dir := filepath.Join(t.TempDir(), "wt")
	if err := w.Add(dir, head, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+filepath.Join(decoy.Dir, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.txt"), []byte("b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, err := w.Candidate(dir, head, gitguard.Options{}, "m\n", loopAuthor)
	if err != nil || c.IsZero() {
		t.Fatalf("Candidate: %v %v", c, err)
	}
	if files := r.Git("ls-tree", "-r", "--name-only", c.String()); files != "a.txt\nb.txt\n" {
		t.Errorf("candidate's files: %q", files)
	}
}

// A blob over the bound is never written into an agent's worktree.
func TestWorktreesAddBound(t *testing.T) {
	r := gittest.New(t)
	r.Write("big.txt", "more than eight bytes\n")
	head := plumbing.NewHash(r.Commit("init"))
	_, w := openWorktrees(t, r.Dir)
	dir := filepath.Join(t.TempDir(), "wt")
	if err := w.Add(dir, head, 8); err == nil || !strings.Contains(err.Error(), "over gate.max_file_bytes (8)") {
		t.Fatalf("Add with an 8-byte bound: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "big.txt")); !os.IsNotExist(err) {
		t.Errorf("big.txt was written: %v", err)
	}
}

// TestCommittedIsLiteral: Committed names a commit that holds the path as written, never
// one holding what git would read into it as a pathspec: a glob's matches (a hidden
// "data/[ab].csv" is not "data/a.csv"), or magic (":secret" is a file of that name, not
// "secret" from the top). The loop's refusal of committed hidden data rests on it.
func TestCommittedIsLiteral(t *testing.T) {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{"data/a.csv": "a\n", ":secret": "s\n", "*": "star\n"})
	head := r.Commit("init")
	_, w := openWorktrees(t, r.Dir)
	for rel, want := range map[string]string{
		"data/a.csv": head, ":secret": head, "*": head,
		"data/[ab].csv": "", "data/*.csv": "", "secret": "", ":(glob)data/*": "", ":/data/a.csv": "",
	} {
		if got, err := w.Committed(rel); err != nil || got != want {
			t.Errorf("Committed(%q) = %q, %v; want %q", rel, got, err, want)
		}
	}
}

// openWorktrees opens the repository at dir and its worktrees, failing the test on error.
func openWorktrees(t *testing.T, dir string) (*gitguard.Repo, *gitguard.Worktrees) {
	t.Helper()
	repo, err := gitguard.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := repo.Worktrees()
	if err != nil {
		t.Fatal(err)
	}
	return repo, w
}

// TestWorktreesDeepPath: in an agent's linked worktree, as in the main one
// (TestDeepAllowedPath), a new folder at a path past MaxPathBytes is refused unread with
// its length named; the candidate used to leave it out without a word.
func TestWorktreesDeepPath(t *testing.T) {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{"a.txt": "a\n"})
	head := plumbing.NewHash(r.Commit("init"))
	_, w := openWorktrees(t, r.Dir)
	dir := filepath.Join(t.TempDir(), "wt")
	if err := w.Add(dir, head, 0); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("a/", gitguard.MaxPathBytes/2+1) + "s.sh"
	if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(deep)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, deep), []byte("exit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, unread, err := w.Candidate(dir, head, gitguard.Options{}, "m\n", loopAuthor)
	folder := deep[:gitguard.MaxPathBytes+1] // the first folder past the bound, reported whole
	want := fmt.Sprintf("Step 0: a path of %d bytes, over the %d a clean room can hold: left unread", len(folder), gitguard.MaxPathBytes)
	if err != nil || !c.IsZero() || len(unread) != 1 || unread[0] != want {
		t.Fatalf("Candidate: %v %q %v; want it refused unread: %q", c, unread, err, want)
	}
}
