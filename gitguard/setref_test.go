package gitguard

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/internal/gittest"
)

func TestSetRefCompareAndSet(t *testing.T) {
	g := gittest.New(t)
	g.Write("a.txt", "a\n")
	one := plumbing.NewHash(g.Commit("one"))
	g.Write("a.txt", "b\n")
	two := plumbing.NewHash(g.Commit("two"))
	r, err := Open(g.Dir)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "refs/hgate/test"
	// Absent: only a zero old matches.
	if err := r.SetRef(ref, one, two); !errors.Is(err, ErrRefChanged) {
		t.Fatalf("absent ref, wrong old: %v", err)
	}
	if err := r.SetRef(ref, one, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	if err := r.SetRef(ref, two, plumbing.ZeroHash); !errors.Is(err, ErrRefChanged) {
		t.Fatalf("present ref, zero old: %v", err)
	}
	if err := r.SetRef(ref, two, one); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(g.Git("rev-parse", ref)); got != two.String() {
		t.Fatalf("git reads %s, want %s", got, two)
	}
	// Packed (the loose file gone), then moved again: git and go-git agree.
	g.Git("pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(g.Dir, ".git", ref)); err == nil {
		t.Fatal("pack-refs left the loose ref")
	}
	if err := r.SetRef(ref, one, two); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(g.Git("rev-parse", ref)); got != one.String() {
		t.Fatalf("after packing, git reads %s, want %s", got, one)
	}
	// A symbolic ref is not overwritten.
	g.Git("symbolic-ref", "refs/hgate/sym", "refs/heads/master")
	if err := r.SetRef("refs/hgate/sym", one, plumbing.ZeroHash); err == nil {
		t.Fatal("a symbolic ref was overwritten")
	}
	if err := r.SetRef("HEAD", one, two); err == nil {
		t.Fatal("a name outside refs/ was accepted")
	}
}
