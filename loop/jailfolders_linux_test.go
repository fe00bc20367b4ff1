package loop

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestRestoreAttrs: what the agent changed of a writable mount's folder or of a workspace
// file it writes by design (mode 000, which would stop hgate at its next read) is put
// back after the phase and said; what it left alone is not said.
func TestRestoreAttrs(t *testing.T) {
	dir := t.TempDir()
	folder, file, same := filepath.Join(dir, "root"), filepath.Join(dir, "learnings.md"), filepath.Join(dir, "loop-message.txt")
	os.Mkdir(folder, 0o755)
	for _, f := range []string{file, same} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	jl := &jail{}
	var err error
	if jl.attrs, err = snapshotAttrs([]string{folder, file, same}); err != nil {
		t.Fatal(err)
	}
	os.Chmod(folder, 0)
	os.Chmod(file, 0)
	changed, err := jl.restoreAttrs()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{folder, file}) {
		t.Fatalf("changed: %v", changed)
	}
	for p, want := range map[string]os.FileMode{folder: 0o755 | os.ModeDir, file: 0o644, same: 0o644} {
		if fi, _ := os.Lstat(p); fi.Mode() != want {
			t.Errorf("%s: %v, want %v", p, fi.Mode(), want)
		}
	}
	if changed, _ := jl.restoreAttrs(); len(changed) != 0 {
		t.Fatalf("nothing changed, and yet: %v", changed)
	}
	if _, err := snapshotAttrs([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Fatal("a missing path was snapshotted")
	}
}

// TestHgateFiles: of the write set, the workspace's regular files are hgate's to put back;
// the worktree's files and any folder are not (Step 0 judges a mode change there).
func TestHgateFiles(t *testing.T) {
	dir := t.TempDir()
	ws, wt := filepath.Join(dir, "workspace"), filepath.Join(dir, "wt")
	for _, d := range []string{ws, wt, filepath.Join(ws, "cli-home")} {
		os.MkdirAll(d, 0o755)
	}
	msg, notes, allowed := filepath.Join(ws, "loop-message.txt"), filepath.Join(ws, "learnings.md"), filepath.Join(wt, "agent.sh")
	for _, f := range []string{msg, notes, allowed} {
		os.WriteFile(f, nil, 0o644)
	}
	got := hgateFiles([]string{allowed, msg, filepath.Join(ws, "cli-home"), notes, filepath.Join(ws, "gone")}, ws)
	if !slices.Equal(got, []string{msg, notes}) {
		t.Fatalf("got %v", got)
	}
}
