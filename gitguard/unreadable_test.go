package gitguard_test

import (
	"os"
	"strings"
	"testing"

	"github.com/hgate/hgate/gitguard"
)

// TestUnreadableAllowedFile: a file on an allowed path whose owner may not read it (chmod
// 000, tracked or new) is a violation that says so, never an error of the check, and the
// candidate tree keeps HEAD's entry: it is never read. As root, where the read would work,
// the mode alone decides.
func TestUnreadableAllowedFile(t *testing.T) {
	r := newProject(t)
	if err := os.WriteFile(r.Path("notes/new.md"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"notes/idea.md", "notes/new.md"} {
		if err := os.Chmod(r.Path(p), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(r.Path(p), 0o644) })
	}
	opts := gitguard.Options{Allow: allow}
	vs := check(t, r, opts)
	if got, want := summary(vs), "notes/idea.md:modified\nnotes/new.md:untracked\n"; got != want {
		t.Fatalf("violations:\n%swant:\n%s", got, want)
	}
	for _, v := range vs {
		if !strings.Contains(v.Detail, "a file its owner may not read (its permissions were changed): not read") {
			t.Errorf("%s: detail %q", v.Path, v.Detail)
		}
	}
	g, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := g.CandidateTree(opts)
	if err != nil {
		t.Fatalf("candidate: %v", err)
	}
	_, headTree, err := g.Head()
	if err != nil {
		t.Fatal(err)
	}
	if tree != headTree {
		t.Errorf("candidate tree %s, want HEAD's %s", tree, headTree)
	}
}
