//go:build linux

package walk

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/index"
	"github.com/hgate/hgate/gitguard/internal/pattern"
)

// TestWalkClosesFolders: every folder the walk opens (each inside its parent's open
// handle, held until its subfolders are open) is closed when it ends, and each tracked
// file is hashed; a tracked folder replaced by a link is not followed.
func TestWalkClosesFolders(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	var es []index.Entry
	for i := 0; i < 600; i++ { // more than statChunk files in one folder, and deep folders
		p := fmt.Sprintf("a/b%d/c/f%03d", i%3, i)
		if i >= 300 {
			p = fmt.Sprintf("flat/f%03d", i)
		}
		data := []byte(p + "\n")
		must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, p), data, 0o644))
		es = append(es, index.Entry{Path: p, Mode: 0o100644, Hash: plumbing.ComputeHash(plumbing.BlobObject, data)})
	}
	es = append(es, index.Entry{Path: "gone/f", Mode: 0o100644})
	must(t, os.WriteFile(filepath.Join(outside, "f"), []byte("outside\n"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(root, "gone")))
	sortEntries(es)
	before := openFds(t)
	res, err := Walk(&Input{Root: root, Entries: es, Allow: pattern.NewMatcher(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if after := openFds(t); after != before {
		t.Errorf("%d descriptors open after the walk, %d before", after, before)
	}
	for k, e := range es {
		ws := res.WT[k]
		if e.Path == "gone/f" {
			if ws.Present {
				t.Errorf("gone/f read through the link at gone: %+v", ws)
			}
			continue
		}
		if !ws.Present || ws.Hash != e.Hash {
			t.Errorf("%s: %+v, want hash %s", e.Path, ws, e.Hash)
		}
	}
}

func sortEntries(es []index.Entry) {
	for i := 1; i < len(es); i++ {
		for j := i; j > 0 && es[j].Path < es[j-1].Path; j-- {
			es[j], es[j-1] = es[j-1], es[j]
		}
	}
}

func openFds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	return len(ents)
}

// TestStateSize: the walk writes one State per index entry, and each page of them is a
// page fault; a field added here should not grow it past 28 bytes unnoticed.
func TestStateSize(t *testing.T) {
	if n := unsafe.Sizeof(State{}); n > 28 {
		t.Errorf("State is %d bytes, want at most 28", n)
	}
}

// TestWalkStopsPastMaxPath: an untracked folder whose path passes MaxPathBytes is
// reported whole and never read, so a fifo below it is not seen; the walk used to read a
// tree thousands of folders deep to its end, its path strings growing with the depth.
func TestWalkStopsPastMaxPath(t *testing.T) {
	root := t.TempDir()
	deep := filepath.Join(root, "d/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a")
	must(t, os.MkdirAll(deep, 0o755))
	must(t, syscall.Mkfifo(filepath.Join(deep, "fifo"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "d", "f"), nil, 0o644))
	res, err := Walk(&Input{Root: root, Allow: pattern.NewMatcher(nil), MaxPathBytes: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := []Untracked{{Path: "d/a/a/a/a", Mode: filemode.Dir}, {Path: "d/f", Mode: filemode.Regular}}
	slices.SortFunc(res.Untracked, func(a, b Untracked) int { return strings.Compare(a.Path, b.Path) })
	if !slices.Equal(res.Untracked, want) {
		t.Errorf("untracked %v, want %v", res.Untracked, want)
	}
}
