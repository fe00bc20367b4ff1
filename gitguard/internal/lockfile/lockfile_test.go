package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCommitReplacesAndAbortKeepsAnotherWritersLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ref")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Create(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, time.Hour); !isHeld(err) {
		t.Fatalf("second writer: %v, want a held lock", err)
	}
	if err := l.Commit([]byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Fatalf("file holds %q", b)
	}
	// Once renamed, the lock name is free: the next writer's lock must survive our cleanup.
	next, err := Create(path, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	l.Abort()
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("the next writer's lock was removed: %v", err)
	}
	next.Abort()
	if _, err := os.Stat(path + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("aborted lock left: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Fatalf("an abort changed the file: %q", b)
	}
}

func TestStaleLockIsBroken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(path+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(path, time.Hour); !isHeld(err) {
		t.Fatalf("fresh lock: %v, want held", err)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(path+".lock", old, old)
	l, err := Create(path, time.Hour)
	if err != nil {
		t.Fatalf("stale lock: %v", err)
	}
	l.Abort()
	os.WriteFile(path+".lock", nil, 0o644)
	if l, err = Create(path, 0); err != nil {
		t.Fatalf("staleAfter 0 breaks any lock: %v", err)
	}
	l.Abort()
}

func isHeld(err error) bool {
	var h *HeldError
	return errors.As(err, &h)
}
