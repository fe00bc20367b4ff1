package scratch

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/hgate/hgate/internal/proc"
)

// Sweep removes the folders of a process that is gone, a read-only inside included, and
// leaves a running process's, and every folder that does not name its maker.
func TestSweep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times need /proc")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := proc.Owner{PID: cmd.ProcessState.Pid(), StartTicks: proc.Self().StartTicks}
	parent := t.TempDir()
	mine, err := MkdirTemp(parent, "hgate-loop-")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, prefix := range Prefixes {
		d := filepath.Join(parent, prefix+dead.Tag()+"-42")
		want = append(want, d)
		if err := os.MkdirAll(filepath.Join(d, "ro", "x"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(d, "ro"), 0o500)
	}
	keep := []string{mine}
	for _, name := range []string{"hgate-rooms-abc", "hgate-123456", "hgate-trace-99", "other-" + dead.Tag() + "-1"} {
		d := filepath.Join(parent, name)
		keep = append(keep, d)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	got := Sweep(parent)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Sweep removed %q, want %q", got, want)
	}
	for _, d := range want {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s is still there", d)
		}
	}
	for _, d := range keep {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// TestRemoveAllByDescriptor: a folder a task made read-only goes, and a link in the
// folder to outside is removed, never followed: what it points at keeps its mode.
func TestRemoveAllByDescriptor(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "d"), 0o750); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "hgate-x")
	if err := os.MkdirAll(filepath.Join(dir, "ro", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "ro", "sub", "f"), []byte("x"), 0o444)
	os.Chmod(filepath.Join(dir, "ro", "sub"), 0o555)
	os.Chmod(filepath.Join(dir, "ro"), 0o555)
	if err := os.Symlink(filepath.Join(outside, "d"), filepath.Join(dir, "ro-link")); err != nil {
		t.Fatal(err)
	}
	RemoveAll(dir)
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Fatalf("%s left: %v", dir, err)
	}
	if fi, err := os.Stat(filepath.Join(outside, "d")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Fatalf("the link's target: %v %v", fi.Mode(), err)
	}
}
