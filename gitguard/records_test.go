package gitguard

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/timescale"
)

const recTestRef = "refs/hgate/test"

func recOpen(t *testing.T, g *gittest.Repo) *Repo {
	t.Helper()
	r, err := Open(g.Dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recGitFiles reads a commit's files with the git CLI.
func recGitFiles(t *testing.T, g *gittest.Repo, commit plumbing.Hash) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, p := range strings.Fields(g.Git("ls-tree", "-r", "--name-only", commit.String())) {
		out[p] = []byte(g.Git("show", commit.String()+":"+p))
	}
	return out
}

func TestCommitFilesMatchesGit(t *testing.T) {
	g := gittest.New(t)
	r := recOpen(t, g)
	steps := []struct {
		name    string
		changes map[string][]byte
		want    []string // paths in the tree afterwards
	}{
		{"first commit creates the ref", map[string][]byte{
			"suite.json": []byte("{}\n"), "receipts/b.json": []byte("b"), "receipts/a.json": []byte("a"),
		}, []string{"receipts/a.json", "receipts/b.json", "suite.json"}},
		// Git orders "a.json" < "a/" < "a0": a tree sorted by plain names
		// would put "a" first and fail git fsck.
		{"names that sort differently with a trailing slash", map[string][]byte{
			"a/x": []byte("x"), "a.json": []byte("1"), "a0": []byte("2"), "a-b": []byte(""),
		}, []string{"a-b", "a.json", "a/x", "a0", "receipts/a.json", "receipts/b.json", "suite.json"}},
		{"modify and delete", map[string][]byte{
			"suite.json": []byte("{\"tasks\": []}\n"), "receipts/a.json": nil, "a/x": nil, "absent": nil,
		}, []string{"a-b", "a.json", "a0", "receipts/b.json", "suite.json"}},
		{"nothing changes", map[string][]byte{},
			[]string{"a-b", "a.json", "a0", "receipts/b.json", "suite.json"}},
		{"delete everything", map[string][]byte{
			"a-b": nil, "a.json": nil, "a0": nil, "receipts/b.json": nil, "suite.json": nil,
		}, nil},
	}
	var prev plumbing.Hash
	for i, s := range steps {
		h, err := r.CommitFiles(recTestRef, s.changes, fmt.Sprintf("step %d: %s", i, s.name))
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if tip, _ := r.Ref(recTestRef); tip != h {
			t.Fatalf("%s: ref holds %s, want %s", s.name, tip, h)
		}
		got, err := r.FilesAt(h)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, s.want) {
			t.Errorf("%s: files %q, want %q", s.name, keys, s.want)
		}
		if want := recGitFiles(t, g, h); !maps.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
			t.Errorf("%s: FilesAt %q, git show %q", s.name, got, want)
		}
		for p, data := range got {
			one, err := r.FileAt(h, p)
			if err != nil || string(one) != string(data) {
				t.Errorf("%s: FileAt %s = %q, %v; want %q", s.name, p, one, err, data)
			}
		}
		parents := strings.Fields(g.Git("rev-list", "--parents", "-n1", h.String()))[1:]
		if prev.IsZero() && len(parents) != 0 || !prev.IsZero() && (len(parents) != 1 || parents[0] != prev.String()) {
			t.Errorf("%s: parents %v, want %v", s.name, parents, prev)
		}
		prev = h
	}
	if out, err := g.Fsck("--strict", "--no-dangling"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(g.Git("log", "-1", "--format=%an <%ae>|%cn <%ce>|%s", recTestRef)); got != "hgate <hgate@localhost>|hgate <hgate@localhost>|step 4: delete everything" {
		t.Errorf("git log: %q", got)
	}
}

func TestFileAt(t *testing.T) {
	g := gittest.New(t)
	g.WriteFiles(map[string]string{"hgate.yaml": "allow: [a.py]\n", "dir/f.txt": "f\n"})
	g.Symlink("hgate.yaml", "link.yaml")
	c := plumbing.NewHash(g.Commit("init"))
	g.Write("hgate.yaml", "allow: ['*']\n") // the worktree copy must not matter
	r := recOpen(t, g)

	got, err := r.FileAt(c, "hgate.yaml")
	if err != nil || string(got) != g.Git("show", c.String()+":hgate.yaml") {
		t.Errorf("FileAt hgate.yaml = %q, %v", got, err)
	}
	tests := []struct {
		path     string
		notExist bool
		msg      string
	}{
		{"missing.yaml", true, "missing.yaml"},
		{"dir", true, "dir"},
		{"dir/none", true, "dir/none"},
		{"hgate.yaml/x", true, "hgate.yaml/x"},
		{"link.yaml", false, "symlink"},
		{"../x", false, "not allowed"},
	}
	for _, tt := range tests {
		_, err := r.FileAt(c, tt.path)
		if err == nil || errors.Is(err, fs.ErrNotExist) != tt.notExist || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("FileAt %s: %v (want not-exist %v, mentioning %q)", tt.path, err, tt.notExist, tt.msg)
		}
	}
	if _, err := r.FileAt(plumbing.ZeroHash, "hgate.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FileAt zero commit: %v", err)
	}
}

func TestCommitFilesRejects(t *testing.T) {
	r := recOpen(t, gittest.New(t))
	if _, err := r.CommitFiles(recTestRef, map[string][]byte{"a": []byte("1")}, "a"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref   string
		files map[string][]byte
		msg   string
	}{
		{"hgate/ledger", nil, "not a valid ref"},
		{"refs/hgate/bad..name", nil, "not a valid ref"},
		{recTestRef, map[string][]byte{"/abs": {}}, "clean relative"},
		{recTestRef, map[string][]byte{"a//b": {}}, "clean relative"},
		{recTestRef, map[string][]byte{"x/../y": {}}, "clean relative"},
		{recTestRef, map[string][]byte{".git/config": {}}, "not allowed"},
		{recTestRef, map[string][]byte{"a/b": {}}, `"a" is both a file and a directory`},
	}
	for _, tt := range tests {
		_, err := r.CommitFiles(tt.ref, tt.files, "bad")
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("CommitFiles %s %q: %v, want %q", tt.ref, slices.Collect(maps.Keys(tt.files)), err, tt.msg)
		}
	}
	if log, _ := r.LogRef(recTestRef, 0); len(log) != 1 {
		t.Errorf("a rejected write moved the ref: %d commits", len(log))
	}
}

// TestCommitFilesRetry makes another writer win the race once, in the
// window between building the commit and moving the ref, both when the ref
// does not exist yet and when it does: the loser must rebuild on top of the
// winner, losing neither commit nor file.
func TestCommitFilesRetry(t *testing.T) {
	for _, existing := range []bool{false, true} {
		t.Run(fmt.Sprintf("existing=%v", existing), func(t *testing.T) {
			g := gittest.New(t)
			a, b := recOpen(t, g), recOpen(t, g)
			if existing {
				if _, err := a.CommitFiles(recTestRef, map[string][]byte{"base": []byte("0")}, "base"); err != nil {
					t.Fatal(err)
				}
			}
			fired := 0
			recBeforeSetRef = func(string) {
				fired++
				if fired == 1 {
					if _, err := b.CommitFiles(recTestRef, map[string][]byte{"b": []byte("from b")}, "b"); err != nil {
						t.Errorf("b: %v", err)
					}
				}
			}
			defer func() { recBeforeSetRef = nil }()
			h, err := a.CommitFiles(recTestRef, map[string][]byte{"a": []byte("from a")}, "a")
			if err != nil {
				t.Fatal(err)
			}
			// a builds, b builds and lands, a fails its set and rebuilds.
			if fired != 3 {
				t.Errorf("hook ran %d times, want 3", fired)
			}
			files, err := a.FilesAt(h)
			if err != nil {
				t.Fatal(err)
			}
			if string(files["a"]) != "from a" || string(files["b"]) != "from b" {
				t.Errorf("tip files %q: a write was lost", files)
			}
			log, err := a.LogRef(recTestRef, 0)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, e := range log {
				msgs = append(msgs, e.Message)
			}
			want := []string{"a", "b"}
			if existing {
				want = append(want, "base")
			}
			if !slices.Equal(msgs, want) {
				t.Errorf("log %q, want %q", msgs, want)
			}
		})
	}
}

// TestCommitFilesConcurrent runs two writers on separate handles at once,
// starting with no ref (the creation race, repeated on several refs): every
// commit must land on one first-parent chain.
func TestCommitFilesConcurrent(t *testing.T) {
	// Each writer's retries are bounded by time, which a loaded machine fills with
	// fewer attempts: the bound stretched by HGATE_TEST_TIMESCALE.
	recRetryFor = timescale.D(10 * time.Second)
	defer func() { recRetryFor = 0 }()
	g := gittest.New(t)
	const n, refs = 6, 4
	var wg sync.WaitGroup
	errs := make(chan error, 2*n*refs)
	for _, w := range []string{"x", "y"} {
		r := recOpen(t, g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range refs {
				for i := range n {
					p := fmt.Sprintf("receipts/%s%d.json", w, i)
					if _, err := r.CommitFiles(fmt.Sprintf("%s%d", recTestRef, k), map[string][]byte{p: []byte(p)}, p); err != nil {
						errs <- err
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r := recOpen(t, g)
	for k := range refs {
		ref := fmt.Sprintf("%s%d", recTestRef, k)
		log, err := r.LogRef(ref, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 2*n {
			t.Errorf("%s: %d commits, want %d", ref, len(log), 2*n)
		}
		files, err := r.FilesAt(log[0].Hash)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 2*n {
			t.Errorf("%s: tip holds %d files, want %d: %q", ref, len(files), 2*n, slices.Sorted(maps.Keys(files)))
		}
		for _, e := range log {
			if len(e.Changed) != 1 || e.Changed[0] != e.Message {
				t.Errorf("%s: commit %q changed %q", ref, e.Message, e.Changed)
			}
		}
	}
}

// TestCommitFilesOddRefStorage: a ref only in packed-refs, and the empty
// loose file go-git leaves when a compare-and-set finds the ref deleted.
func TestCommitFilesOddRefStorage(t *testing.T) {
	g := gittest.New(t)
	r := recOpen(t, g)
	first, err := r.CommitFiles(recTestRef, map[string][]byte{"a": []byte("1")}, "first")
	if err != nil {
		t.Fatal(err)
	}
	g.Git("pack-refs", "--all")
	if _, err := os.Stat(g.Path(".git/" + recTestRef)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("pack-refs left the loose ref: %v", err)
	}
	second, err := r.CommitFiles(recTestRef, map[string][]byte{"b": []byte("2")}, "second")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(g.Git("rev-parse", recTestRef+"~1")); got != first.String() {
		t.Errorf("parent of %s is %s, want %s", second, got, first)
	}

	const other = "refs/hgate/empty"
	g.Write(".git/"+other, "")
	if h, err := r.Ref(other); err != nil || !h.IsZero() {
		t.Fatalf("empty loose ref reads as %s, %v", h, err)
	}
	h, err := r.CommitFiles(other, map[string][]byte{"c": []byte("3")}, "over an empty file")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(g.Git("rev-parse", other)); got != h.String() {
		t.Errorf("git reads %s as %s, want %s", other, got, h)
	}
}

func TestLogRef(t *testing.T) {
	r := recOpen(t, gittest.New(t))
	if log, err := r.LogRef(recTestRef, 0); err != nil || len(log) != 0 {
		t.Fatalf("absent ref: %v, %v", log, err)
	}
	steps := []struct {
		msg     string
		changes map[string][]byte
	}{
		{"prepare: baseline", map[string][]byte{"suite.json": []byte("1"), "split.json": []byte("s")}},
		{"gate: tree abc pass\n", map[string][]byte{"suite.json": []byte("2"), "receipts/abc.json": []byte("r")}},
		{"gate: rerun", nil},
		{"manual edit: split.json", map[string][]byte{"split.json": nil}},
	}
	for _, s := range steps {
		if _, err := r.CommitFiles(recTestRef, s.changes, s.msg); err != nil {
			t.Fatal(err)
		}
	}
	log, err := r.LogRef(recTestRef, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range log {
		got = append(got, e.Message+" "+strings.Join(e.Changed, ","))
		if e.When.IsZero() {
			t.Errorf("%q: no time", e.Message)
		}
	}
	want := []string{
		"manual edit: split.json split.json",
		"gate: rerun ",
		"gate: tree abc pass receipts/abc.json,suite.json",
		"prepare: baseline split.json,suite.json",
	}
	if !slices.Equal(got, want) {
		t.Errorf("log\n%q\nwant\n%q", got, want)
	}
	if short, _ := r.LogRef(recTestRef, 2); len(short) != 2 || short[0].Hash != log[0].Hash {
		t.Errorf("max 2: %d entries", len(short))
	}
	hashes, err := r.BlobHashesAt(log[0].Hash)
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Collect(maps.Keys(hashes))
	sort.Strings(keys)
	if !slices.Equal(keys, []string{"receipts/abc.json", "suite.json"}) || hashes["suite.json"] != plumbing.ComputeHash(plumbing.BlobObject, []byte("2")) {
		t.Errorf("BlobHashesAt: %v", hashes)
	}
}
