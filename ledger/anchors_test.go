package ledger

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
)

// oldLedger is a fixture whose ledger predates anchors (commits made by record, as an
// hgate before anchors made them) and whose refs/hgate/gated points at HEAD.
func oldLedger(t *testing.T) (*fixture, plumbing.Hash) {
	f := newFixture(t)
	f.g.Write("a.txt", "a\n")
	head := plumbing.NewHash(f.g.Commit("one"))
	if err := f.l.record("prepare: baseline", state()); err != nil {
		t.Fatal(err)
	}
	if err := f.l.write(state()); err != nil {
		t.Fatal(err)
	}
	if err := f.l.repo.SetRef(gitguard.GatedRef, head, plumbing.ZeroHash); err != nil {
		t.Fatal(err)
	}
	return f, head
}

func TestAnchorsAdoptedOnNextWrite(t *testing.T) {
	f, head := oldLedger(t)
	// Nothing recorded yet: nothing to check, nothing said.
	if rolled, err := CheckRefs(f.l.repo); err != nil || rolled != nil {
		t.Fatalf("old ledger: %v, %v", rolled, err)
	}
	if err := f.l.Commit(Update{Message: "gate: tree ccc pass", Files: map[string][]byte{"receipts/ccc.json": []byte("{}\n")}}); err != nil {
		t.Fatal(err)
	}
	if h, ok, err := ExpectedRef(f.l.repo, gitguard.GatedRef); err != nil || !ok || h != head {
		t.Fatalf("after the first write the ledger says %s, %v, %v; want %s", h, ok, err, head)
	}
	// From now on a move is caught.
	f.g.Write("b.txt", "b\n")
	next := plumbing.NewHash(f.g.Commit("two"))
	f.g.Git("update-ref", gitguard.GatedRef, next.String())
	_, err := CheckRefs(f.l.repo)
	var m *Moved
	if !errors.As(err, &m) || len(m.Refs) != 1 || m.Refs[0].At != next || m.Refs[0].Want != head {
		t.Fatalf("moved ref: %v", err)
	}
	if !strings.Contains(err.Error(), "git update-ref "+gitguard.GatedRef+" "+head.String()) {
		t.Errorf("no way out in %q", err)
	}
	if names, err := RestoreRefs(f.l.repo); err != nil || len(names) != 1 {
		t.Fatalf("RestoreRefs: %v, %v", names, err)
	}
	if rolled, err := CheckRefs(f.l.repo); err != nil || rolled != nil {
		t.Fatalf("after RestoreRefs: %v, %v", rolled, err)
	}
}

// A write that moves a ref on a ledger older than anchors adopts them in a commit of its
// own first, so a crash before the ref moves is still finished.
func TestAnchorsAdoptedBeforeAMove(t *testing.T) {
	f, _ := oldLedger(t)
	f.g.Write("b.txt", "b\n")
	next := plumbing.NewHash(f.g.Commit("two"))
	before, _ := f.l.Log(0)
	crashed := func() (crashed bool) {
		defer func() { crashed = recover() != nil }()
		f.l.Commit(Update{Message: "record: iteration 1", Refs: map[string]plumbing.Hash{gitguard.GatedRef: next, gitguard.BestRef: next},
			BeforeRefs: func() { panic("crash") }})
		return false
	}()
	if !crashed {
		t.Fatal("BeforeRefs did not run")
	}
	log, _ := f.l.Log(0)
	if len(log) != len(before)+2 || !strings.HasPrefix(log[1].Message, "adopt ") {
		t.Fatalf("log after the write: %+v", log)
	}
	rolled, err := CheckRefs(f.l.repo)
	if err != nil || len(rolled) != 2 || !strings.Contains(rolled[0], "finished a move that a crash interrupted") {
		t.Fatalf("CheckRefs after the crash: %q, %v", rolled, err)
	}
	for _, name := range anchorRefs {
		if h, _ := f.l.repo.Ref(name); h != next {
			t.Errorf("%s at %s, want %s", name, h, next)
		}
	}
}

// A ref moved onto the value the tip's parent had is put back where the tip says, never
// adopted: what a crash leaves and what an agent could fake are treated alike.
func TestRollForwardNeverAdopts(t *testing.T) {
	f, head := oldLedger(t)
	f.g.Write("b.txt", "b\n")
	next := plumbing.NewHash(f.g.Commit("two"))
	if err := f.l.Commit(Update{Message: "record", Refs: map[string]plumbing.Hash{gitguard.GatedRef: next}}); err != nil {
		t.Fatal(err)
	}
	f.g.Git("update-ref", gitguard.GatedRef, head.String())
	if rolled, err := CheckRefs(f.l.repo); err != nil || len(rolled) != 1 {
		t.Fatalf("%q, %v", rolled, err)
	}
	if h, _ := f.l.repo.Ref(gitguard.GatedRef); h != next {
		t.Errorf("gated at %s, want %s", h, next)
	}
}

func TestCarryDifferences(t *testing.T) {
	f := newFixture(t)
	f.g.Write("deps/a.py", "a\n")
	f.g.Write("deps/sub/b.py", "b\n")
	f.g.Symlink("a.py", "deps/link")
	m, err := BuildManifest(f.g.Dir, []string{"deps/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 3 || m.Files[1].Link != "a.py" || m.Files[0].SHA256 == "" {
		t.Fatalf("manifest %+v", m.Files)
	}
	if err := f.l.Commit(Update{Message: "prepare", Carry: m}); err != nil {
		t.Fatal(err)
	}
	got, err := f.l.Carry()
	if err != nil || len(got.Differences(m)) != 0 {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	f.g.Write("deps/a.py", "evil\n")
	f.g.Chmod("deps/sub/b.py", 0o755)
	f.g.Remove("deps/link")
	f.g.Write("deps/new.py", "n\n")
	now, err := BuildManifest(f.g.Dir, []string{"deps/"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := strings.Join(got.Differences(now), "\n")
	for _, want := range []string{"deps/a.py changed since it was accepted (digest ", "deps/sub/b.py changed since it was accepted (mode 0444 → 0555",
		"deps/link removed", "deps/new.py added"} {
		if !strings.Contains(d, want) {
			t.Errorf("differences %q lack %q", d, want)
		}
	}
	// Write permission alone is not a change: the clean room copies read-only.
	f.g.Write("deps/a.py", "a\n")
	f.g.Chmod("deps/a.py", 0o444)
	again, _ := BuildManifest(f.g.Dir, []string{"deps/"}, nil)
	if d := strings.Join(got.Differences(again), "\n"); strings.Contains(d, "deps/a.py") {
		t.Errorf("a.py, back but read-only, still differs: %q", d)
	}
}

// BenchmarkBuildManifest hashes 1000 carried files of 16 KiB (16 MiB), what every gate
// with such a carry adds before its tasks run.
func BenchmarkBuildManifest(b *testing.B) {
	f := newFixture(b)
	data := strings.Repeat("x", 16<<10)
	for i := range 1000 {
		f.g.Write(fmt.Sprintf("deps/d%02d/f%03d.py", i%20, i), data)
	}
	b.SetBytes(1000 * 16 << 10)
	for b.Loop() {
		if _, err := BuildManifest(f.g.Dir, []string{"deps/"}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckRefs is the anchor check every command makes (twice: loading hgate.yaml
// and verifying state).
func BenchmarkCheckRefs(b *testing.B) {
	f := newFixture(b)
	f.g.Write("a.txt", "a\n")
	head := plumbing.NewHash(f.g.Commit("one"))
	if err := f.l.Commit(Update{Message: "prepare", Files: state(), Refs: map[string]plumbing.Hash{gitguard.GatedRef: head}}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := CheckRefs(f.l.repo); err != nil {
			b.Fatal(err)
		}
	}
}

// A reader during a move (the ledger committed, the refs not yet moved, a ref's lock
// held by the writer) neither moves a ref nor touches the lock, and reports the move as
// pending rather than as a ref moved outside hgate; the writer then makes its move.
func TestReadRefsWritesNothing(t *testing.T) {
	f, head := oldLedger(t)
	f.g.Write("b.txt", "b\n")
	next := plumbing.NewHash(f.g.Commit("two"))
	lock := f.g.Path(".git/" + gitguard.GatedRef + ".lock")
	err := f.l.Commit(Update{Message: "record: iteration 1", Refs: map[string]plumbing.Hash{gitguard.GatedRef: next},
		BeforeRefs: func() {
			f.g.Write(".git/"+gitguard.GatedRef+".lock", "writer's\n")
			pending, err := ReadRefs(f.l.repo)
			if err != nil || len(pending) != 1 || pending[0].Ref != gitguard.GatedRef || pending[0].Want != next || pending[0].At != head {
				t.Errorf("ReadRefs mid-move: %+v, %v", pending, err)
			}
			if h, _ := f.l.repo.Ref(gitguard.GatedRef); h != head {
				t.Errorf("a reader moved %s to %s", gitguard.GatedRef, h)
			}
			if data, err := os.ReadFile(lock); err != nil || string(data) != "writer's\n" {
				t.Errorf("a reader touched the writer's lock: %q, %v", data, err)
			}
			os.Remove(lock) // the writer's own lock, in this test written by hand
		}})
	if err != nil {
		t.Fatalf("the writer failed: %v", err)
	}
	if h, _ := f.l.repo.Ref(gitguard.GatedRef); h != next {
		t.Errorf("gated at %s after the write, want %s", h, next)
	}
	if pending, err := ReadRefs(f.l.repo); err != nil || pending != nil {
		t.Errorf("after the move: %+v, %v", pending, err)
	}
}
