//go:build linux

package cleanroom

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hgate/hgate/internal/fsafe"
)

// carry reads the worktree, which a sandbox may have written, by descriptor: a link the
// agent planted at a carried path's parent folder is not followed (the room gets nothing
// from outside), and a hard link to a file elsewhere is refused, not copied.
func TestCarryNeverFollows(t *testing.T) {
	base := t.TempDir()
	wt, outside, room := filepath.Join(base, "wt"), filepath.Join(base, "outside"), filepath.Join(base, "room")
	for _, d := range []string{filepath.Join(wt, "data"), filepath.Join(outside, "x"), room} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "x", "answers"), []byte("ANSWER"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wt, "data", "ok"), []byte("fine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(wt, "up")); err != nil {
		t.Fatal(err)
	}
	src, err := fsafe.OpenRoot(wt)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := carry(src, "up/x", filepath.Join(room, "up", "x")); err == nil {
		t.Error("carry followed a link at a parent folder")
	}
	if _, err := os.Stat(filepath.Join(room, "up", "x", "answers")); err == nil {
		t.Error("the room holds a file from outside the worktree")
	}
	if err := carry(src, "data", filepath.Join(room, "data")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(room, "data", "ok")); err != nil || string(b) != "fine" {
		t.Errorf("carried data/ok: %q, %v", b, err)
	}
	if err := os.Link(filepath.Join(outside, "x", "answers"), filepath.Join(wt, "data", "hard")); err != nil {
		t.Fatal(err)
	}
	if err := carry(src, "data", filepath.Join(room, "data2")); err == nil {
		t.Error("carry copied a hard-linked file")
	}
	if b, err := os.ReadFile(filepath.Join(room, "data2", "hard")); err == nil {
		t.Errorf("the room holds the hard link's content %q", b)
	}
}
