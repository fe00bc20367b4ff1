package gitguard_test

import (
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// TestEmptiedAndOverlaid: EmptiedTree empties exactly the files allow matches (an empty
// one stays as it is) and OverlayAllowed takes exactly the allowed paths from the other
// tree (changed, added, removed); neither touches the worktree, and the other paths keep
// their blobs.
func TestEmptiedAndOverlaid(t *testing.T) {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{"agent/a.py": "print(1)\n", "agent/empty.py": "", "check.sh": "exit 0\n", "PROGRAM.md": "p\n"})
	base := plumbing.NewHash(r.Commit("base"))
	r.WriteFiles(map[string]string{"agent/a.py": "print(2)\n", "agent/new.py": "x\n", "check.sh": "exit 1\n"})
	r.Git("rm", "-q", "PROGRAM.md")
	other := plumbing.NewHash(r.Commit("other"))
	repo, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	baseTree, _ := repo.TreeOf(base)
	otherTree, _ := repo.TreeOf(other)
	allow := []string{"agent/", "PROGRAM.md"}

	emptied, paths, err := repo.EmptiedTree(baseTree, allow)
	if err != nil || !slices.Equal(paths, []string{"PROGRAM.md", "agent/a.py"}) {
		t.Fatalf("emptied %v, %v", paths, err)
	}
	changed, _ := repo.ChangedPaths(baseTree, emptied)
	if !slices.Equal(changed, paths) {
		t.Fatalf("the emptied tree differs in %v, want %v", changed, paths)
	}

	over, paths, err := repo.OverlayAllowed(baseTree, otherTree, allow)
	if err != nil || !slices.Equal(paths, []string{"PROGRAM.md", "agent/a.py", "agent/new.py"}) {
		t.Fatalf("overlaid %v, %v", paths, err)
	}
	changed, _ = repo.ChangedPaths(baseTree, over)
	if !slices.Equal(changed, paths) || slices.Contains(changed, "check.sh") {
		t.Fatalf("the overlaid tree differs in %v, want %v", changed, paths)
	}
	if st := r.Git("status", "--porcelain"); st != "" {
		t.Fatalf("the worktree changed: %s", st)
	}
}
