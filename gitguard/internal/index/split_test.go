package index

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/gittest"
)

// splitRepo builds a repository whose index is split, with entries of the
// shared index replaced (stat refreshed), deleted, added over and added new
// in the split file, over more than 64 entries so the bitmaps span words.
func splitRepo(t testing.TB) *gittest.Repo {
	r := gittest.New(t)
	files := map[string]string{}
	for i := range 150 {
		files[fmt.Sprintf("d%d/f%03d.txt", i%7, i)] = strconv.Itoa(i) + "\n"
	}
	r.WriteFiles(files)
	r.Commit("init")
	r.Git("config", "splitIndex.maxPercentChange", "100")
	// git keeps racily clean entries out of a new shared index (and may then
	// write the index whole): settle every entry first.
	settled, older := time.Unix(1600000000, 0), time.Unix(1500000000, 0)
	for p := range files {
		os.Chtimes(r.Path(p), settled, settled)
	}
	r.Git("update-index", "--refresh")
	r.Git("update-index", "--split-index")
	for _, i := range []int{3, 70, 71, 149} {
		os.Chtimes(r.Path(fmt.Sprintf("d%d/f%03d.txt", i%7, i)), older, older)
	}
	script := `git update-index --refresh >/dev/null
echo changed > d1/f001.txt && git add d1/f001.txt
echo changed > d2/f100.txt && git add d2/f100.txt
git rm -q --cached d0/f000.txt d5/f138.txt
echo new > d0/new.txt && echo new > zz.txt && git add d0/new.txt zz.txt
echo ita > d3/ita.txt && git add -N d3/ita.txt
git update-index --chmod=+x d4/f004.txt`
	if out, err := r.Sh(script); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r
}

// lsFiles is what git reads from the index: mode hash stage path, and the
// stat data, one entry per line.
func lsFiles(t testing.TB, r *gittest.Repo) string {
	out := r.Git("ls-files", "-s", "--debug")
	// --debug prints the fields on indented lines after each entry.
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  ") {
			b.WriteString(" " + strings.Join(strings.Fields(l), " "))
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(l)
	}
	return strings.TrimSpace(b.String()) + "\n"
}

func formatEntries(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		var flags uint32
		if e.SkipWorktree {
			flags |= 1 << 30
		}
		if e.IntentToAdd {
			flags |= 1 << 29
		}
		fmt.Fprintf(&b, "%06o %s %d\t%s ctime: %d:%d mtime: %d:%d dev: %d ino: %d uid: %d gid: %d size: %d flags: %x\n",
			e.Mode, e.Hash, e.Stage, e.Path, e.CtimeS, e.CtimeN, e.MtimeS, e.MtimeN, e.Dev, e.Ino, e.UID, e.GID, e.Size, flags)
	}
	return b.String()
}

// TestSplitIndexMatchesGit reads a split index and compares every entry,
// stat data included, with what git reads from it.
func TestSplitIndexMatchesGit(t *testing.T) {
	r := splitRepo(t)
	data, err := os.ReadFile(r.Path(".git/index"))
	if err != nil {
		t.Fatal(err)
	}
	_, link, err := parseIndexFile(data)
	if err != nil || link == nil || link.base.IsZero() {
		t.Fatalf("the index is not split: %v %v", link, err)
	}
	shared, _ := os.ReadFile(r.Path(".git/sharedindex." + link.base.String()))
	base, _, _ := parseIndexFile(shared)
	for name, bm := range map[string][]byte{"delete": link.deleted, "replace": link.replace} {
		if bits, err := ewahBits(bm, len(base.Entries)); err != nil || len(bits) == 0 {
			t.Errorf("%s bitmap: %v %v; the test wants it used", name, bits, err)
		}
	}
	idx, err := Read(r.Path(".git/index"), r.Path(".git"))
	if err != nil {
		t.Fatal(err)
	}
	// git ls-files --debug prints flags for extended bits only; compare the rest.
	got := formatEntries(idx.Entries)
	want := lsFiles(t, r)
	if strip := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if i := strings.Index(l, " flags:"); i >= 0 {
				l = l[:i]
			}
			out = append(out, l)
		}
		return strings.Join(out, "\n")
	}; strip(got) != strip(want) {
		t.Errorf("entries differ from git's:\nours:\n%s\ngit:\n%s", got, want)
	}
	// Unsplit, the same entries.
	r.Git("update-index", "--no-split-index")
	whole, err := Read(r.Path(".git/index"), r.Path(".git"))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Entries) != len(idx.Entries) {
		t.Fatalf("%d entries unsplit, %d split", len(whole.Entries), len(idx.Entries))
	}
	for i := range whole.Entries {
		a, b := &whole.Entries[i], &idx.Entries[i]
		if a.Path != b.Path || a.Hash != b.Hash || a.Mode != b.Mode || a.IntentToAdd != b.IntentToAdd {
			t.Errorf("entry %d: unsplit %+v, split %+v", i, *a, *b)
		}
	}
}

// TestEWAHBits decodes bitmaps as git's ewah_serialize lays them out.
func TestEWAHBits(t *testing.T) {
	ewah := func(words ...uint64) []byte {
		b := binary.BigEndian.AppendUint32(nil, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(len(words)))
		for _, w := range words {
			b = binary.BigEndian.AppendUint64(b, w)
		}
		return binary.BigEndian.AppendUint32(b, 0)
	}
	marker := func(bit uint64, run, literals uint64) uint64 { return bit | run<<1 | literals<<33 }
	tests := []struct {
		name  string
		data  []byte
		limit int
		want  string
		err   bool
	}{
		{"empty", ewah(), 10, "[]", false},
		{"one literal", ewah(marker(0, 0, 1), 0b1011), 10, "[0 1 3]", false},
		{"zero run then literal", ewah(marker(0, 2, 1), 1<<63|1), 200, "[128 191]", false},
		{"run of ones", ewah(marker(1, 1, 0)), 64, fmt.Sprint(seq(0, 64)), false},
		{"two markers", ewah(marker(0, 0, 1), 1, marker(0, 1, 1), 2), 200, "[0 129]", false},
		{"bit past the entries", ewah(marker(0, 0, 1), 1<<20), 10, "", true},
		{"run past the entries", ewah(marker(1, 1<<31, 0)), 1000, "", true},
		{"literal words past the end", ewah(marker(0, 0, 3), 1), 100, "", true},
		{"truncated", ewah(marker(0, 0, 1), 1)[:15], 100, "", true},
	}
	for _, tc := range tests {
		bits, err := ewahBits(tc.data, tc.limit)
		if (err != nil) != tc.err {
			t.Errorf("%s: error %v", tc.name, err)
			continue
		}
		if !tc.err && fmt.Sprint(bits) != tc.want && !(len(bits) == 0 && tc.want == "[]") {
			t.Errorf("%s: %v, want %s", tc.name, bits, tc.want)
		}
	}
}

func seq(lo, hi int) []int {
	var s []int
	for i := lo; i < hi; i++ {
		s = append(s, i)
	}
	return s
}

// FuzzSplitIndex mutates a split index (the checksum recomputed) against
// its real shared index: whatever is accepted must be a valid index, and
// nothing may panic or run away.
func FuzzSplitIndex(f *testing.F) {
	r := splitRepo(f)
	data, err := os.ReadFile(r.Path(".git/index"))
	if err != nil {
		f.Fatal(err)
	}
	shared, _ := filepath.Glob(r.Path(".git/sharedindex.*"))
	if len(shared) != 1 {
		f.Fatalf("%d shared indexes", len(shared))
	}
	sdata, err := os.ReadFile(shared[0])
	if err != nil {
		f.Fatal(err)
	}
	id := strings.TrimPrefix(filepath.Base(shared[0]), "sharedindex.")
	f.Add(data[:len(data)-sha1.Size])
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := sha1.Sum(body)
		idx, err := Parse(append(body[:len(body):len(body)], sum[:]...), func(got string) ([]byte, error) {
			if got != id {
				return nil, os.ErrNotExist
			}
			return sdata, nil
		})
		if err != nil {
			return
		}
		if err := checkEntries(idx.Entries); err != nil {
			t.Fatalf("accepted an index that fails its checks: %v", err)
		}
		if bytes.Contains([]byte(formatEntries(idx.Entries)), []byte("\t ")) {
			t.Fatalf("nameless entry accepted")
		}
	})
}
