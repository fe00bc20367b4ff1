package shimtest

import (
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
