package loop

import (
	"os"
	"path/filepath"
	"testing"
)

// A folder of the agent's and one programs are run from overlap when one holds the other,
// as written or through links, and not when they only share a prefix of their names.
func TestOverlap(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "home", ".local")
	if err := os.MkdirAll(filepath.Join(real, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "bin")
	if err := os.Symlink(filepath.Join(real, "bin"), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{real, filepath.Join(real, "bin"), true},
		{filepath.Join(real, "bin"), real, true},
		{real, real, true},
		{real + "x", real, false},
		{filepath.Join(dir, "home", ".loc"), real, false},
		{real, link, true},                                 // a PATH entry that links into the agent's folder
		{filepath.Join(link, "new", "folder"), real, true}, // not there yet: its existing part resolved
		{filepath.Join(dir, "other"), link, false},
	} {
		if got := overlap(c.a, c.b); got != c.want {
			t.Errorf("overlap(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
