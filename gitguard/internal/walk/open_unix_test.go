//go:build linux || darwin

package walk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// opener is what the walk asks of a directory handle before it hashes a file.
type opener interface {
	stat(name string) (Stat, error)
	openStat(name string) (Stat, openFile, error)
}

// TestOpenStat checks openStat of both directory handles (Linux's and fdDir) against
// stat by name: the same data for a regular file, whose hash is git's; a link refused
// (never followed); a fifo opened without blocking and seen as what it is.
func TestOpenStat(t *testing.T) {
	dir := t.TempDir()
	data := []byte(strings.Repeat("abcdefg\n", 9000))
	must(t, os.WriteFile(filepath.Join(dir, "file"), data, 0o755))
	must(t, os.Symlink("file", filepath.Join(dir, "link")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	dh, err := openDir(dir)
	must(t, err)
	defer dh.close()
	fd, err := openFdDir(dir)
	must(t, err)
	defer fd.close()
	for _, d := range []opener{dh, fd} {
		checkOpenStat(t, d, data)
	}
}

func checkOpenStat(t *testing.T, d opener, data []byte) {
	t.Helper()
	st, f, err := d.openStat("file")
	if err != nil || !f.ok {
		t.Fatalf("%T: openStat file: %v", d, err)
	}
	byName, err := d.stat("file")
	if err != nil || st != byName {
		t.Errorf("%T: openStat gives %+v, stat by name %+v (%v)", d, st, byName, err)
	}
	got, err := f.hash(st.Size)
	if want := plumbing.ComputeHash(plumbing.BlobObject, data); err != nil || got != want {
		t.Errorf("%T: hash %s, %v; want %s", d, got, err, want)
	}
	f.close()
	if _, f, err := d.openStat("file"); err == nil {
		if _, err := f.hash(int64(len(data)) - 1); err == nil {
			t.Errorf("%T: a file larger than its stat size was accepted", d)
		}
		f.close()
	}
	if _, _, err := d.openStat("link"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("%T: openStat of a symlink: %v, want ELOOP", d, err)
	}
	if _, _, err := d.openStat("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%T: openStat of a missing name: %v", d, err)
	}
	for _, name := range []string{"fifo", "sub"} {
		st, f, err := d.openStat(name)
		if err != nil {
			t.Errorf("%T: openStat %s: %v", d, name, err)
			continue
		}
		f.close()
		if st.IsReg() {
			t.Errorf("%T: %s seen as a regular file", d, name)
		}
	}
}

// TestOpenDirAt: a folder is opened inside its parent's handle, never through a link,
// and inside the folder the parent was when it was opened, even after it was swapped
// for a link to another.
func TestOpenDirAt(t *testing.T) {
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "p", "sub"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "other", "sub", "theirs"), 0o755))
	must(t, os.Symlink("sub", filepath.Join(root, "p", "link")))
	dh, err := openDir(filepath.Join(root, "p"))
	must(t, err)
	defer dh.close()
	fd, err := openFdDir(filepath.Join(root, "p"))
	must(t, err)
	defer fd.close()
	must(t, os.Rename(filepath.Join(root, "p"), filepath.Join(root, "moved")))
	must(t, os.Symlink("other", filepath.Join(root, "p")))
	sub, err := openDirAt(dh, "sub")
	must(t, err)
	ents, err := sub.entries(new([]byte), nil)
	sub.close()
	if err != nil || len(ents) != 0 {
		t.Errorf("sub holds %v (%v): opened by path through the link, not inside the parent", ents, err)
	}
	fsub, err := fd.openSub("sub")
	must(t, err)
	ents, err = fsub.entries(new([]byte), nil)
	fsub.close()
	if err != nil || len(ents) != 0 {
		t.Errorf("fdDir: sub holds %v (%v)", ents, err)
	}
	if d, err := openDirAt(dh, "link"); err == nil {
		d.close()
		t.Error("openDirAt followed a link")
	}
	if d, err := fd.openSub("link"); err == nil {
		d.close()
		t.Error("fdDir.openSub followed a link")
	}
}
