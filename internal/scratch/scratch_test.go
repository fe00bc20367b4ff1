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
