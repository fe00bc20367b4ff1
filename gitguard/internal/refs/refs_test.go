package refs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
)

func store(g *gittest.Repo) *Store {
	dir := filepath.Join(g.Dir, ".git")
	return &Store{GitDir: dir, CommonDir: dir}
}

// Update is a compare-and-set whatever the ref holds: nothing, a loose hash, a packed
// hash, a symbolic ref; git reads every result.
func TestUpdate(t *testing.T) {
	g := gittest.New(t)
	g.Write("a", "1")
	one := g.Commit("one")
	g.Write("a", "2")
	two := g.Commit("two")
	s := store(g)
	const ref = "refs/hgate/x"
	steps := []struct {
		new, old string
		err      string
	}{
		{one, two, "holds nothing, expected " + two[:12]},
		{one, "", ""},
		{two, "", "holds " + one[:12] + ", expected nothing"},
		{two, one, ""},
		{"ref: refs/heads/main", two, ""},
		{one, "ref: refs/heads/main", ""},
		{"", one, ""},
		{"", "", ""},
		{"ref: ../escape", "", "cannot write"},
		{"junk", "", "cannot write"},
	}
	for i, st := range steps {
		err := s.Update(ref, st.new, st.old)
		if st.err == "" && err != nil || st.err != "" && (err == nil || !strings.Contains(err.Error(), st.err)) {
			t.Fatalf("step %d: Update(%q, %q): %v, want %q", i, st.new, st.old, err, st.err)
		}
		if strings.Contains(st.err, "holds") && !errors.Is(err, ErrChanged) {
			t.Fatalf("step %d: %v does not wrap ErrChanged", i, err)
		}
		if st.err == "" {
			if got, _ := s.Read(ref); got != st.new {
				t.Fatalf("step %d: reads %q, want %q", i, got, st.new)
			}
		}
		if i == 3 {
			g.Git("pack-refs", "--all")
		}
	}
	if _, err := os.Stat(s.Path(ref) + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a lock stayed: %v", err)
	}
	if err := s.Update("HEAD", one, "ref: refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(g.Git("rev-parse", "HEAD")); got != one {
		t.Fatalf("detached HEAD at %s, want %s", got, one)
	}
	if err := s.Update("heads/main", one, ""); err == nil {
		t.Fatal("a name outside refs/ was accepted")
	}
}

// BreakLocks removes the locks a killed hgate left on the named refs and on the branch
// HEAD names, and nothing else.
func TestBreakLocks(t *testing.T) {
	g := gittest.New(t)
	g.Write("a", "1")
	g.Commit("one")
	s := store(g)
	for _, n := range []string{"HEAD", "refs/heads/main", "refs/hgate/gated", "refs/hgate/other"} {
		os.MkdirAll(filepath.Dir(s.Path(n)), 0o755)
		if err := os.WriteFile(s.Path(n)+".lock", nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s.BreakLocks("refs/hgate/gated")
	for n, want := range map[string]bool{"HEAD": false, "refs/heads/main": false, "refs/hgate/gated": false, "refs/hgate/other": true} {
		_, err := os.Stat(s.Path(n) + ".lock")
		if got := err == nil; got != want {
			t.Errorf("%s.lock present %v, want %v", n, got, want)
		}
	}
}

// Resolve follows HEAD to its branch (loose or packed), gives zero for an unborn branch,
// and stops a loop of symbolic refs.
func TestResolve(t *testing.T) {
	g := gittest.New(t)
	s := store(g)
	if h, err := s.Resolve("HEAD"); err != nil || !h.IsZero() {
		t.Fatalf("unborn HEAD: %s, %v", h, err)
	}
	g.Write("a", "1")
	one := g.Commit("one")
	g.Git("pack-refs", "--all")
	if h, err := s.Resolve("HEAD"); err != nil || h.String() != one {
		t.Fatalf("HEAD: %s, %v; want %s", h, err, one)
	}
	g.Git("symbolic-ref", "refs/hgate/a", "refs/hgate/b")
	g.Git("symbolic-ref", "refs/hgate/b", "refs/hgate/a")
	if _, err := s.Resolve("refs/hgate/a"); err == nil || !strings.Contains(err.Error(), "symbolic refs in a row") {
		t.Fatalf("a loop of symbolic refs: %v", err)
	}
}

// List reads loose refs over packed ones as git does: a loose ref hides its
// packed line, an empty loose file (a kill mid-write) falls back to it, a
// lock is never a ref; and deleting a packed ref rewrites packed-refs
// without it (nor its peeled line), which git then agrees with.
func TestListAndPacked(t *testing.T) {
	g := gittest.New(t)
	g.Write("a", "1")
	one := g.Commit("one")
	g.Write("a", "2")
	two := g.Commit("two")
	g.Git("update-ref", "refs/hgate/p", one)
	g.Git("update-ref", "refs/hgate/q", one)
	g.Git("tag", "-a", "-m", "t", "t1", one)
	g.Git("update-ref", "refs/hgate/empty", one)
	g.Git("pack-refs", "--all")
	g.Git("update-ref", "refs/hgate/q", two) // loose over packed
	s := store(g)
	os.WriteFile(s.Path("refs/hgate/empty"), nil, 0o644)
	os.WriteFile(s.Path("refs/hgate/x.lock"), []byte(two+"\n"), 0o644)
	got, err := s.List("refs/hgate/")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"refs/hgate/p": one, "refs/hgate/q": two, "refs/hgate/empty": one}
	if len(got) != len(want) {
		t.Fatalf("List = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	tag := strings.TrimSpace(g.Git("rev-parse", "refs/tags/t1"))
	if err := s.Update("refs/tags/t1", "", tag); err != nil {
		t.Fatal(err)
	}
	if err := s.Update("refs/hgate/q", "", two); err != nil {
		t.Fatal(err)
	}
	os.Remove(s.Path("refs/hgate/empty")) // git calls an empty loose file a bad ref
	if out, err := g.TryGit("show-ref"); err != nil || strings.Contains(out, "refs/tags/t1") || strings.Contains(out, "refs/hgate/q") || !strings.Contains(out, "refs/hgate/p") {
		t.Fatalf("git show-ref after the deletes: %s %v", out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(g.Dir, ".git", "packed-refs")); strings.Contains(string(b), "^") {
		t.Fatalf("the tag's peeled line stayed:\n%s", b)
	}
	if out, err := g.Fsck("--no-progress"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
