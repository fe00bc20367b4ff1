//go:build linux

package walk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/hgate/hgate/gitguard/internal/index"
	"github.com/hgate/hgate/gitguard/internal/pattern"
)

// TestDirStat checks the walk's stat inside an open directory against
// lstat of the full path, for each kind of name it meets.
func TestDirStat(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("data\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("n", 255) // NAME_MAX: fills the name buffer but one byte
	if err := os.WriteFile(filepath.Join(dir, long), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dh, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dh.close()
	for _, name := range []string{"file", "link", "sub", long} {
		got, err := dh.stat(name)
		if err != nil {
			t.Fatalf("stat %s: %v", name, err)
		}
		want, err := Lstat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("stat %s = %+v, lstat gives %+v", name, got, want)
		}
	}
	for _, tc := range []struct {
		name string
		want error
	}{
		{"missing", fs.ErrNotExist},
		{"file/x", syscall.ENOTDIR},
		{long + "n", syscall.ENAMETOOLONG},
		{"nul\x00byte", syscall.EINVAL},
	} {
		if _, err := dh.stat(tc.name); !errors.Is(err, tc.want) {
			t.Errorf("stat %.20q: error %v, want %v", tc.name, err, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { dh.stat("file") }); n != 0 {
		t.Errorf("stat allocates %v times per call, want 0", n)
	}
}

// TestDirHashFile checks the guard's in-directory hash against git's blob
// hash for sizes around the read buffer, and its refusals.
func TestDirHashFile(t *testing.T) {
	dir := t.TempDir()
	dh, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dh.close()
	for _, n := range []int{0, 1, 100, 64<<10 - 12, 64<<10 - 11, 64<<10 - 10, 64 << 10, 200<<10 + 7} {
		data := []byte(strings.Repeat("abcdefg\n", n/8+1)[:n])
		name := "f" + strings.Repeat("x", n%7)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := dh.hashFile(name, int64(n))
		if err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		if want := plumbing.ComputeHash(plumbing.BlobObject, data); got != want {
			t.Errorf("size %d: hash %s, want %s", n, got, want)
		}
		if _, err := dh.hashFile(name, int64(n)+1); err == nil {
			t.Errorf("size %d: a size other than the file's was accepted", n)
		}
		if n > 0 {
			if _, err := dh.hashFile(name, int64(n)-1); err == nil {
				t.Errorf("size %d: a larger file than its lstat size was accepted", n)
			}
		}
	}
	os.Symlink("f", filepath.Join(dir, "link"))
	if _, err := dh.hashFile("link", 1); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("symlink: %v, want ELOOP", err)
	}
	syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644)
	if _, err := dh.hashFile("fifo", 1); err == nil {
		t.Errorf("fifo accepted")
	}
}

// TestOpenStatAllocs: opening and stating a file the walk hashes allocates nothing.
func TestOpenStatAllocs(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dh, err := openDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dh.close()
	n := testing.AllocsPerRun(100, func() {
		if _, f, err := dh.openStat("file"); err == nil {
			f.close()
		}
	})
	if n != 0 {
		t.Errorf("openStat allocates %v times per call, want 0", n)
	}
}

// TestDirEntries: a listing larger than the buffer goes on in a larger one, keeps every
// name (those read before the growth too), skips "." and "..", and copies no name.
func TestDirEntries(t *testing.T) {
	dir := t.TempDir()
	want := map[string]bool{"..x": true, ".y": true}
	for i := 0; i < 300; i++ { // about 80 KB of records: past the first 32 KB buffer
		want[fmt.Sprintf("%03d%s", i, strings.Repeat("n", 240))] = true
	}
	for name := range want {
		must(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))
	}
	dh, err := openDir(dir)
	must(t, err)
	defer dh.close()
	var buf []byte
	ents, err := dh.entries(&buf, nil)
	must(t, err)
	if len(buf) <= 32<<10 {
		t.Errorf("buffer of %d bytes after the listing: it never grew", len(buf))
	}
	got := map[string]bool{}
	for _, e := range ents {
		if got[e.name] || !want[e.name] || e.typ != dtReg {
			t.Errorf("entry %.12q (type %d): unexpected or listed twice", e.name, e.typ)
		}
		got[e.name] = true
	}
	if len(got) != len(want) {
		t.Errorf("%d names listed, want %d", len(got), len(want))
	}
	out := make([]dirent, 0, 512)
	if n := testing.AllocsPerRun(20, func() {
		unix.Seek(dh.fd, 0, 0)
		out, _ = dh.entries(&buf, out[:0])
	}); n != 0 {
		t.Errorf("a listing allocates %v times, want 0", n)
	}
}

// TestWalkRootUntrackedKept: an untracked name at the root, listed in a worker's buffer,
// is still whole after the worker lists other folders into the same buffer.
func TestWalkRootUntrackedKept(t *testing.T) {
	root := t.TempDir()
	var es []index.Entry
	for i := 0; i < 200; i++ { // 20 folders of 10 long names: each listing covers the root's
		p := fmt.Sprintf("d%02d/%02d%s", i/10, i%10, strings.Repeat("x", 200))
		must(t, os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, p), nil, 0o644))
		es = append(es, index.Entry{Path: p, Mode: 0o100644, Hash: emptyBlob})
	}
	must(t, os.WriteFile(filepath.Join(root, "untracked-at-root"), nil, 0o644))
	res, err := Walk(&Input{Root: root, Entries: es, Allow: pattern.NewMatcher(nil)})
	must(t, err)
	if len(res.Untracked) != 1 || res.Untracked[0].Path != "untracked-at-root" {
		t.Errorf("untracked %+v, want [untracked-at-root]", res.Untracked)
	}
}
