package gitguard_test

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// Every move of a ref hgate owns respects NAME.lock, as git does: a delete through
// SetRef and a RestoreRefs too, not only a write. A lock left long ago by a killed
// process is broken; a fresh one is another writer's and is left alone.
func TestRefMovesRespectLocks(t *testing.T) {
	g := gittest.New(t)
	g.Write("a.txt", "a\n")
	one := plumbing.NewHash(g.Commit("one"))
	g.Write("a.txt", "b\n")
	two := plumbing.NewHash(g.Commit("two"))
	repo := open(t, g)
	const ref = "refs/hgate/gated"
	if err := repo.SetRef(ref, one, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	snap, err := repo.SnapshotRefs("refs/hgate/")
	if err != nil {
		t.Fatal(err)
	}
	g.Git("update-ref", ref, two.String())
	lock := g.Path(".git/" + ref + ".lock")
	g.Write(".git/"+ref+".lock", one.String()+"\n") // a writer between its write and its rename

	if err := repo.SetRef(ref, plumbing.ZeroHash, two); !errors.Is(err, gitguard.ErrRefChanged) || !strings.Contains(err.Error(), "gated.lock exists") {
		t.Fatalf("delete under another writer's lock: %v", err)
	}
	if err := repo.RestoreRefs("refs/hgate/", snap); !errors.Is(err, gitguard.ErrRefChanged) {
		t.Fatalf("restore under another writer's lock: %v", err)
	}
	if got := strings.TrimSpace(g.Git("rev-parse", ref)); got != two.String() {
		t.Fatalf("the ref moved under another writer's lock: %s", got)
	}
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("another writer's lock was removed: %v", err)
	}

	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	if err := repo.RestoreRefs("refs/hgate/", snap); err != nil {
		t.Fatalf("restore past a stale lock: %v", err)
	}
	if got := strings.TrimSpace(g.Git("rev-parse", ref)); got != one.String() {
		t.Fatalf("restored to %s, want %s", got, one)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock left after the restore: %v", err)
	}

	// A packed ref is deleted from packed-refs too, and no lock stays behind.
	g.Git("pack-refs", "--all")
	if err := repo.SetRef(ref, plumbing.ZeroHash, one); err != nil {
		t.Fatal(err)
	}
	if out, err := g.TryGit("rev-parse", "--verify", "-q", ref); err == nil {
		t.Fatalf("deleted packed ref still reads as %s", out)
	}
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lock left after the delete: %v", err)
	}
}

// A symbolic ref the agent left in place of a hash, or one the snapshot held, is put
// back through the same lock-and-rename as any other value.
func TestRestoreRefsSymbolic(t *testing.T) {
	g := gittest.New(t)
	g.Write("a.txt", "a\n")
	one := g.Commit("one")
	g.Git("update-ref", "refs/hgate/gated", one)
	g.Git("symbolic-ref", "refs/hgate/sym", "refs/heads/master")
	repo := open(t, g)
	snap, err := repo.SnapshotRefs("refs/hgate/")
	if err != nil {
		t.Fatal(err)
	}
	g.Git("symbolic-ref", "refs/hgate/gated", "refs/heads/master")
	g.Git("update-ref", "--no-deref", "refs/hgate/sym", one)
	if err := repo.RestoreRefs("refs/hgate/", snap); err != nil {
		t.Fatal(err)
	}
	if got := refFile(t, g.Path(".git/refs/hgate/gated")); got != one+"\n" {
		t.Errorf("gated holds %q, want the hash", got)
	}
	if got := refFile(t, g.Path(".git/refs/hgate/sym")); got != "ref: refs/heads/master\n" {
		t.Errorf("sym holds %q, want the symbolic ref", got)
	}
}

func refFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
