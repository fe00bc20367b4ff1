package gittest

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMemoryUsable: a tmpfs mounted noexec, or one smaller than memoryMinFree (a
// container's /dev/shm), does not take the tests' temporary folders; a large one that
// runs what is written there does. Mounting needs root.
func TestMemoryUsable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mount := func(flags uintptr, size string) string {
		dir := t.TempDir()
		if err := unix.Mount("tmpfs", dir, "tmpfs", flags, "size="+size); err != nil {
			t.Skipf("cannot mount a tmpfs here: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
		return dir
	}
	for _, tt := range []struct {
		name  string
		flags uintptr
		size  string
		want  bool
	}{
		{"noexec", unix.MS_NOEXEC, "4g", false},
		{"64 MiB, as a container's", 0, "64m", false},
		{"large, exec", 0, "4g", true},
	} {
		if got := memoryUsable(mount(tt.flags, tt.size)); got != tt.want {
			t.Errorf("%s: memoryUsable %v, want %v", tt.name, got, tt.want)
		}
	}
	if memoryUsable(t.TempDir() + "/missing") {
		t.Error("a folder that does not exist is usable")
	}
}
