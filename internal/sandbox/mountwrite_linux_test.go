package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testMountWrite: a folder of MountWrite holding an allowed file (the repository's root
// with train.py allowed by name). The allowed file is rewritten in place; a file made
// beside it is refused by Landlock with EACCES, not EROFS (on which claude's Edit does not
// fall back to an in-place write); every other entry of the folder, a file, a folder and
// what is below it, stays read-only for attributes as without MountWrite. The verdicts are
// read from the disk. Without MountWrite the same create fails with EROFS: the check can
// fail.
func testMountWrite(t *testing.T) {
	if err := Namespaces(); err != nil {
		t.Skip(err)
	}
	dir := writableTemp(t)
	allowed, ro, sub := filepath.Join(dir, "train.py"), filepath.Join(dir, "ro.txt"), filepath.Join(dir, "sub")
	inner := filepath.Join(sub, "x")
	past := time.Unix(1e9, 0)
	reset := func() {
		os.Remove(filepath.Join(dir, "new.txt"))
		if err := os.MkdirAll(sub, 0o777); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{allowed, ro, inner} {
			os.WriteFile(f, []byte("x\n"), 0o666)
			os.Chmod(f, 0o666)
			os.Chtimes(f, past, past)
		}
		os.Chmod(sub, 0o777)
	}
	script := "echo edited > train.py; echo y > new.txt; chmod 000 ro.txt sub; touch sub/x; mv train.py sub/moved; true"
	reset()
	out, _ := sh(t, &Policy{Write: []string{allowed}, Isolate: true}, dir, script)
	if !strings.Contains(out, "new.txt: Read-only file system") {
		t.Fatalf("without MountWrite: want EROFS on new.txt (the check could not fail), got %q", out)
	}
	reset()
	out, _ = sh(t, &Policy{Write: []string{allowed}, MountWrite: []string{dir}, Isolate: true}, dir, script)
	if !strings.Contains(out, "new.txt: Permission denied") {
		t.Errorf("with MountWrite: want EACCES on new.txt, got %q", out)
	}
	if b, _ := os.ReadFile(allowed); string(b) != "edited\n" {
		t.Errorf("train.py holds %q: the in-place write did not land (or it was moved)", b)
	}
	if _, err := os.Lstat(filepath.Join(dir, "new.txt")); err == nil {
		t.Errorf("new.txt was created")
	}
	for _, p := range []string{ro, sub} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() == 0 {
			t.Errorf("%s: mode changed by the tree (%v)", p, err)
		}
	}
	if fi, err := os.Stat(inner); err != nil || !fi.ModTime().Equal(past) {
		t.Errorf("sub/x: its times were changed by the tree (%v)", err)
	}
}
