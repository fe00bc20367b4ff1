package ledger

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
)

// TestReset: a reset ends the state in one commit whose parent is the old tip, removes
// every state file (drifted or not, ledger's or not) but nothing else, gates the given
// commit and clears refs/hgate/best; what follows is a workspace as new.
func TestReset(t *testing.T) {
	f := prepared(t)
	f.g.Write("a.txt", "a\n")
	one := plumbing.NewHash(f.g.Commit("one"))
	f.g.Write("b.txt", "b\n")
	two := plumbing.NewHash(f.g.Commit("two"))
	if err := f.l.Commit(Update{Message: "record: 1", Refs: map[string]plumbing.Hash{gitguard.GatedRef: one, gitguard.BestRef: one}}); err != nil {
		t.Fatal(err)
	}
	old, _ := f.l.Tip()
	// Drift and strays are ended too; learnings and traces are not state.
	f.g.Write("workspace/suite.json", "{}\n")
	f.g.Write("workspace/receipts/forged.json", "{}\n")
	f.g.Write("workspace/learnings.md", "notes\n")

	rep, err := f.l.Reset(two, "manual reset: start over")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Previous != old || rep.Gated != one || rep.Best != one || len(rep.Removed) != 7 {
		t.Errorf("report %+v", rep)
	}
	log, err := f.l.Log(0)
	if err != nil || len(log) < 2 || log[0].Message != "manual reset: start over" || log[1].Hash != old {
		t.Fatalf("log %+v, %v: want the reset, then the old history", log, err)
	}
	tree, _ := f.l.repo.BlobHashesAt(rep.Entry)
	if _, ok := tree[refsFile]; len(tree) != 1 || !ok {
		t.Errorf("reset tree %v: want the anchors only", tree)
	}
	for name := range state() {
		if _, err := os.Lstat(f.ws + "/" + name); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left: %v", name, err)
		}
	}
	if _, err := os.Lstat(f.ws + "/receipts"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("receipts folder left: %v", err)
	}
	if f.read(t, "learnings.md") != "notes\n" {
		t.Error("learnings.md touched")
	}
	if g, _ := f.l.repo.Ref(gitguard.GatedRef); g != two {
		t.Errorf("gated %s, want %s", g, two)
	}
	if b, _ := f.l.repo.Ref(gitguard.BestRef); !b.IsZero() {
		t.Errorf("best %s, want cleared", b)
	}
	if rolled, err := CheckRefs(f.l.repo); err != nil || rolled != nil {
		t.Errorf("CheckRefs: %v, %v", rolled, err)
	}
	if rec, err := f.l.Verify(); err != nil || rec != nil {
		t.Errorf("Verify: %v, %v", rec, err)
	}
	if m, err := f.l.Carry(); err != nil || m != nil {
		t.Errorf("carry manifest %v, %v: want none", m, err)
	}
}

// TestResetCrash: killed after the reset's commit, before the files went, the next
// Verify finishes the removal as an interrupted write.
func TestResetCrash(t *testing.T) {
	f := prepared(t)
	f.g.Write("a.txt", "a\n")
	head := plumbing.NewHash(f.g.Commit("one"))
	if err := f.l.record("manual reset: start over", map[string][]byte{
		"suite.json": nil, "results.tsv": nil, "split.json": nil, "train_results.json": nil,
		"receipts/aaa.json": nil, "receipts/bbb.json": nil,
		refsFile: refSet{gitguard.GatedRef: head}.marshal(),
	}); err != nil {
		t.Fatal(err)
	}
	rec, err := f.l.Verify()
	if err != nil || len(rec) != 6 || !slices.IsSorted(rec) || !strings.HasPrefix(rec[0], "workspace/receipts/") {
		t.Fatalf("Verify: %q, %v", rec, err)
	}
	f.diskMatches(t, map[string][]byte{})
}
