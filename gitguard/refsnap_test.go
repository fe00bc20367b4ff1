package gitguard_test

import (
	"reflect"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
)

// The loop's view of a ref the agent moves with git plumbing: seen, named, put back.
func TestRefSnapshotRestore(t *testing.T) {
	g := gittest.New(t)
	g.Write("a.txt", "a\n")
	first := g.Commit("first")
	g.Write("a.txt", "b\n")
	second := g.Commit("second")
	g.Git("update-ref", "refs/hgate/gated", first)
	g.Git("update-ref", "refs/hgate/ledger", first)
	g.Git("update-ref", "refs/heads/other", second)
	repo := open(t, g)

	snap, err := repo.SnapshotRefs("refs/hgate/")
	if err != nil {
		t.Fatal(err)
	}
	if want := (map[string]string{"refs/hgate/gated": first, "refs/hgate/ledger": first}); !reflect.DeepEqual(map[string]string(snap), want) {
		t.Fatalf("snapshot %v, want %v", snap, want)
	}

	// The agent's moves: one ref moved, one deleted, one created, one made symbolic.
	g.Git("update-ref", "refs/hgate/gated", second)
	g.Git("update-ref", "-d", "refs/hgate/ledger")
	g.Git("update-ref", "refs/hgate/best", second)
	g.Git("pack-refs", "--all")
	g.Git("symbolic-ref", "refs/hgate/sym", "refs/heads/other")

	now, err := repo.SnapshotRefs("refs/hgate/")
	if err != nil {
		t.Fatal(err)
	}
	got := snap.Changed(now)
	want := []string{
		"refs/hgate/best: created (at " + second[:7] + ")",
		"refs/hgate/gated: moved from " + first[:7] + " to " + second[:7],
		"refs/hgate/ledger: deleted (was " + first[:7] + ")",
		"refs/hgate/sym: created (at ref: refs/heads/other)",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Changed:\n got %q\nwant %q", got, want)
	}
	if err := repo.RestoreRefs("refs/hgate/", snap); err != nil {
		t.Fatal(err)
	}
	if out := g.Git("for-each-ref", "--format=%(refname) %(objectname)", "refs/hgate/"); out != "refs/hgate/gated "+first+"\nrefs/hgate/ledger "+first+"\n" {
		t.Fatalf("after restore git sees:\n%s", out)
	}
	if out := g.Git("rev-parse", "refs/heads/other"); out != second+"\n" {
		t.Fatalf("a ref outside the prefix was touched: %s", out)
	}
}
