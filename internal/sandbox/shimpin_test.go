package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShimPinned: the shim is pinned at its first start; rewritten through another name
// of its file (a hard link in a folder a sandboxed process may write) it is refused at
// the next, and wrap never starts it. This binary re-run as its own shim needs no pin.
func TestShimPinned(t *testing.T) {
	dir := t.TempDir()
	shim, other := filepath.Join(dir, shimName), filepath.Join(dir, "sdk-shim")
	if err := os.WriteFile(shim, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(shim, other); err != nil {
		t.Skip("no hard links here:", err)
	}
	if err := checkPinned(shim); err != nil {
		t.Fatal(err)
	}
	if err := checkPinned(shim); err != nil {
		t.Fatalf("unchanged: %v", err)
	}
	if err := os.WriteFile(other, []byte("#!/bin/sh\necho escaped; exit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkPinned(shim); err == nil || !strings.Contains(err.Error(), "changed while hgate ran") {
		t.Fatalf("rewritten through a hard link: %v", err)
	}
	if err := checkPinned(self); err != nil {
		t.Fatal(err)
	}
}
