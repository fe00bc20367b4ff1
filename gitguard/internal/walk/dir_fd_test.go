//go:build linux || darwin

package walk

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestFdDir checks macOS's and FreeBSD's walk directory (fdDir, run here on Linux): its
// entries, its stat against lstat of the full path, its hash against git's, and its
// refusals to follow a link or block on a fifo.
func TestFdDir(t *testing.T) {
	dir := t.TempDir()
	data := []byte(strings.Repeat("abcdefg\n", 9000))
	must(t, os.WriteFile(filepath.Join(dir, "file"), data, 0o644))
	must(t, os.Symlink("file", filepath.Join(dir, "link")))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	dh, err := openFdDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dh.close()
	ents, err := dh.entries(new([]byte), nil)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ents, func(a, b dirent) int { return strings.Compare(a.name, b.name) })
	want := []dirent{{"fifo", dtOther}, {"file", dtReg}, {"link", dtLink}, {"sub", dtDir}}
	if !slices.Equal(ents, want) {
		t.Errorf("entries %v, want %v", ents, want)
	}
	for _, name := range []string{"file", "link", "sub"} {
		got, err := dh.stat(name)
		lst, lerr := Lstat(filepath.Join(dir, name))
		if err != nil || lerr != nil || got != lst {
			t.Errorf("stat %s = %+v, %v; lstat gives %+v, %v", name, got, err, lst, lerr)
		}
	}
	got, err := dh.hashFile("file", int64(len(data)))
	if want := plumbing.ComputeHash(plumbing.BlobObject, data); err != nil || got != want {
		t.Errorf("hash %s, %v; want %s", got, err, want)
	}
	if _, err := dh.hashFile("file", int64(len(data))-1); err == nil {
		t.Error("a file larger than its lstat size was accepted")
	}
	if _, err := dh.hashFile("link", 4); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("symlink: %v, want ELOOP", err)
	}
	if _, err := dh.hashFile("fifo", 0); err == nil {
		t.Error("fifo accepted")
	}
	if target, err := dh.readlink("link"); err != nil || target != "file" {
		t.Errorf("readlink %q, %v", target, err)
	}
	if _, err := openFdDir(filepath.Join(dir, "link")); err == nil {
		t.Error("opened a symlink as a directory")
	}
}

// TestFdDirSwappedParent: a folder swapped for a link to another after the walk opened it
// is not followed; every name is still read in the folder the walk opened (by name, the
// walk read the other folder's file).
func TestFdDirSwappedParent(t *testing.T) {
	root := t.TempDir()
	dir, other := filepath.Join(root, "dir"), filepath.Join(root, "other")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.Mkdir(other, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("mine\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(other, "f"), []byte("theirs\n"), 0o644))
	dh, err := openFdDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dh.close()
	must(t, os.Rename(dir, filepath.Join(root, "moved")))
	must(t, os.Symlink(other, dir))
	got, err := dh.hashFile("f", 5)
	if want := plumbing.ComputeHash(plumbing.BlobObject, []byte("mine\n")); err != nil || got != want {
		t.Errorf("hash %s, %v; want the opened folder's file's %s", got, err, want)
	}
	ents, err := dh.entries(new([]byte), nil)
	if err != nil || len(ents) != 1 || ents[0].name != "f" {
		t.Errorf("entries %v, %v", ents, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
