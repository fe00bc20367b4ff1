//go:build unix

package statefile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadBounded(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("0123456789"), 0o644)
	for _, tt := range []struct {
		name string
		read func(string, int64) ([]byte, bool, error)
		n    int64
		want string
		cut  bool
	}{
		{"tail cut", ReadTail, 4, "6789", true},
		{"tail whole", ReadTail, 10, "0123456789", false},
		{"head cut", ReadHead, 4, "0123", true},
		{"head whole", ReadHead, 20, "0123456789", false},
	} {
		got, cut, err := tt.read(file, tt.n)
		if err != nil || string(got) != tt.want || cut != tt.cut {
			t.Errorf("%s: %q %v %v, want %q %v", tt.name, got, cut, err, tt.want, tt.cut)
		}
	}
	// A fifo is refused at once, never read (which would block until a writer came).
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	if _, _, err := ReadTail(fifo, 10); !errors.Is(err, ErrNotRegular) {
		t.Errorf("ReadTail(fifo): %v, want ErrNotRegular", err)
	}
}
