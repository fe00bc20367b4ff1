package index

import (
	"bytes"
	"crypto/sha1"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/internal/gittest"
)

// seedIndexes builds real index files of versions 2, 3 and 4 with git,
// including extended flags, long paths, a symlink and conflict-free stages.
func seedIndexes(t testing.TB) [][]byte {
	t.Helper()
	seeded.Lock()
	defer seeded.Unlock()
	if seeded.indexes == nil {
		seeded.indexes = makeSeedIndexes(t) // made once: a dozen git commands
	}
	out := make([][]byte, len(seeded.indexes))
	for i, b := range seeded.indexes {
		out[i] = bytes.Clone(b)
	}
	return out
}

// seeded holds seedIndexes' indexes, made once for every test and fuzz target.
var seeded struct {
	sync.Mutex
	indexes [][]byte
}

func makeSeedIndexes(t testing.TB) [][]byte {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{
		"a.txt":         "a\n",
		"dir/b.txt":     "b\n",
		"dir/sub/c.txt": "c\n",
		"dir.d/e.txt":   "e\n",
		"zz/" + string(bytes.Repeat([]byte("long"), 40)) + ".txt": "long\n",
	})
	r.Symlink("a.txt", "link")
	// A path longer than the 12-bit name length (0xfff), staged without a
	// file, which the file system would refuse.
	long := "deep" + strings.Repeat("/"+strings.Repeat("n", 250), 17)
	blob := strings.TrimSpace(r.Git("hash-object", "-w", "a.txt"))
	r.Git("update-index", "--add", "--cacheinfo", "100644,"+blob+","+long)
	r.Commit("init")
	var out [][]byte
	for _, v := range []string{"2", "3", "4"} {
		r.Git("update-index", "--index-version", v)
		if v == "3" {
			r.Git("update-index", "--skip-worktree", "a.txt")
			r.Write("new.txt", "n\n")
			r.Git("add", "-N", "new.txt")
		}
		b, err := os.ReadFile(r.Path(".git/index"))
		if err != nil {
			t.Fatalf("%v", err)
		}
		out = append(out, b)
	}
	return out
}

func TestParseIndexMatchesGoGit(t *testing.T) {
	for _, data := range seedIndexes(t) {
		compareWithGoGit(t, data, true)
	}
}

// FuzzIndex checks the lean reader against go-git's decoder: whatever the
// lean reader accepts, go-git must decode to the same entries. The fuzzer
// mutates the body; the checksum is recomputed so mutations get past it.
func FuzzIndex(f *testing.F) {
	for _, data := range seedIndexes(f) {
		f.Add(data[:len(data)-sha1.Size])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha1.Sum(body)
		compareWithGoGit(t, append(body[:len(body):len(body)], sum[:]...), false)
	})
}

func compareWithGoGit(t *testing.T, data []byte, mustParse bool) {
	t.Helper()
	ours, err := parseIndex(data)
	if err != nil {
		if mustParse {
			t.Fatalf("parse: %v", err)
		}
		return
	}
	var theirs index.Index
	if err := index.NewDecoder(bytes.NewReader(data)).Decode(&theirs); err != nil {
		t.Fatalf("lean reader accepted an index go-git rejects: %v", err)
	}
	if theirs.Version != ours.Version || len(theirs.Entries) != len(ours.Entries) {
		t.Fatalf("version %d/%d, %d/%d entries", ours.Version, theirs.Version, len(ours.Entries), len(theirs.Entries))
	}
	for i, te := range theirs.Entries {
		oe := &ours.Entries[i]
		switch {
		case oe.Path != te.Name,
			oe.Hash != te.Hash,
			oe.Mode != uint32(te.Mode),
			oe.Size != te.Size,
			oe.Ino != te.Inode,
			oe.Dev != te.Dev,
			oe.UID != te.UID,
			oe.GID != te.GID,
			int(oe.Stage) != int(te.Stage),
			oe.SkipWorktree != te.SkipWorktree,
			oe.IntentToAdd != te.IntentToAdd,
			!te.ModifiedAt.IsZero() && !te.ModifiedAt.Equal(time.Unix(int64(oe.MtimeS), int64(oe.MtimeN))),
			!te.CreatedAt.IsZero() && !te.CreatedAt.Equal(time.Unix(int64(oe.CtimeS), int64(oe.CtimeN))):
			t.Fatalf("entry %d differs:\nours  %+v\ngo-git %+v", i, *oe, *te)
		}
	}
}

func TestParseIndexRejects(t *testing.T) {
	base := seedIndexes(t)[0]
	body := base[:len(base)-sha1.Size]
	resum := func(b []byte) []byte {
		s := sha1.Sum(b)
		return append(b, s[:]...)
	}
	mutate := func(f func(b []byte)) []byte {
		b := append([]byte(nil), body...)
		f(b)
		return resum(b)
	}
	// The first entry's path starts at offset 12+62.
	tests := map[string][]byte{
		"bad checksum":  append(append([]byte(nil), body...), bytes.Repeat([]byte{1}, 20)...),
		"bad signature": mutate(func(b []byte) { b[0] = 'X' }),
		"version 5":     mutate(func(b []byte) { b[7] = 5 }),
		"dotdot path":   mutate(func(b []byte) { copy(b[12+62:], "../") }),
		"unsorted":      mutate(func(b []byte) { b[12+62] = 'z' }),
		"too many":      mutate(func(b []byte) { b[11] = 200 }),
		"unknown ext":   resum(append(append([]byte(nil), body...), 'l', 'o', 'w', 'x', 0, 0, 0, 0)),
		"truncated":     resum(append([]byte(nil), body[:40]...)),
		"git component": mutate(func(b []byte) { copy(b[12+62:], ".git/") }),
		"empty":         nil,
		"huge count":    mutate(func(b []byte) { copy(b[8:], "\xff\xff\xff\xff") }),
		"split index":   resum(append(append([]byte(nil), body...), 'l', 'i', 'n', 'k', 0, 0, 0, 0)),
		"sparse index":  resum(append(append([]byte(nil), body...), 's', 'd', 'i', 'r', 0, 0, 0, 0)),
	}
	for name, data := range tests {
		if _, err := parseIndex(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := parseIndex(base); err != nil {
		t.Fatalf("seed rejected: %v", err)
	}
	// index.skipHash writes a zero trailer, which git accepts.
	zero := append(append([]byte(nil), body...), make([]byte, 20)...)
	if _, err := parseIndex(zero); err != nil {
		t.Errorf("zero trailer: %v", err)
	}
}

// TestHashIndexTrees checks the in-memory trees against git write-tree on
// names whose index order and tree order could differ ("a-b" < "a/x" <
// "a0": a tree sorts as if its name ended in "/"), with intent-to-add and
// deleted entries, and that a path that is both a file and a folder is refused.
func TestHashIndexTrees(t *testing.T) {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{"a-b": "1\n", "a/x": "2\n", "a0": "3\n", "a.b/y": "4\n", "b/c/d/e": "5\n", "gone/f": "6\n"})
	r.Commit("init")
	r.Write("new.txt", "n\n")
	r.Git("add", "-N", "new.txt")
	r.Git("rm", "-q", "--cached", "gone/f")
	want := strings.TrimSpace(r.Git("write-tree"))
	idx, err := Read(r.Path(".git/index"), r.Path(".git"))
	if err != nil {
		t.Fatal(err)
	}
	got, mem, err := HashTrees(idx.Entries)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != want {
		t.Errorf("root %s, git write-tree %s", got, want)
	}
	// The root, a, a.b, b, b/c and b/c/d: every tree the diff may ask for.
	if len(mem) != 6 {
		t.Errorf("%d trees in memory, want 6", len(mem))
	}
	checkLazyTrees(t, idx.Entries, got, mem)
	e := func(p string) Entry { return Entry{Path: p, Mode: 0o100644} }
	if _, _, err := HashTrees([]Entry{e("a"), e("a/x")}); err == nil {
		t.Error("a file and a folder of the same name were accepted")
	}
	if h, _, err := HashTrees(nil); err != nil || h != plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904") {
		t.Errorf("no entries: %s, %v; want the empty tree", h, err)
	}
}

// checkLazyTrees: HashTreesLazy has HashTrees' root, and its find builds each
// tree HashTrees kept (asked with the root built first, then without: a subtree
// is built alone or as part of its parent) and knows no other.
func checkLazyTrees(t *testing.T, entries []Entry, root plumbing.Hash, mem map[plumbing.Hash][]objstore.Entry) {
	t.Helper()
	for _, rootFirst := range []bool{true, false} {
		got, find, err := HashTreesLazy(entries)
		if err != nil || got != root {
			t.Fatalf("HashTreesLazy: %s, %v; HashTrees: %s", got, err, root)
		}
		if rootFirst {
			if _, ok := find(root); !ok {
				t.Fatal("the root tree is not found")
			}
		}
		for h, want := range mem {
			if es, ok := find(h); !ok || !reflect.DeepEqual(es, want) {
				t.Errorf("tree %s: %v, %v; want %v", h, es, ok, want)
			}
		}
		if _, ok := find(plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904")); ok {
			t.Error("a tree not built from the entries was found")
		}
	}
}

// parseIndex parses a whole index file that needs no shared index (see
// Parse).
func parseIndex(data []byte) (*File, error) { return Parse(data, nil) }
