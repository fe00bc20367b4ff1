package shimtest

import (
	"bytes"
	"debug/buildinfo"
	"os"
	"path/filepath"
	"testing"
)

// Install leaves beside the test binary an executable hgate-sandbox built from
// cmd/hgate-sandbox without the race detector, whatever this test binary was built with.
func TestInstallBuildsTheShimBesideTheTestBinary(t *testing.T) {
	if err := install(); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	shim := filepath.Join(filepath.Dir(exe), "hgate-sandbox")
	fi, err := os.Stat(shim)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s: %v, mode %v", shim, err, fi)
	}
	info, err := buildinfo.ReadFile(shim)
	if err != nil {
		t.Fatal(err)
	}
	if info.Path != pkg {
		t.Errorf("%s was built from %s, want %s", shim, info.Path, pkg)
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			t.Errorf("%s is race-built", shim)
		}
	}
	if _, err := os.Stat(shim + ".building"); err == nil {
		t.Errorf("%s.building is left behind", shim)
	}
}

// Build's copy is its own, not the build cache's file: a test that writes over it in place
// leaves the next Build whole.
func TestBuildCopyIsItsOwn(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first"), filepath.Join(dir, "second")
	if err := Build(first, pkg); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first, []byte("spoiled"), 0o755); err != nil { // in place: O_TRUNC
		t.Fatal(err)
	}
	if err := Build(second, pkg); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(second); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the second build differs from the first (%d bytes, want %d): %v", len(got), len(want), err)
	}
}
