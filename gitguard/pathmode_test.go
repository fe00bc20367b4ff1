package gitguard

import (
	"strconv"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TestModeText checks the spelled-out modes against octal formatting, as a
// tree object writes them.
func TestModeText(t *testing.T) {
	for _, m := range []filemode.FileMode{filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule, filemode.Dir, filemode.Deprecated, 0o100600} {
		if got, want := modeText(m), strconv.FormatUint(uint64(m), 8); got != want {
			t.Errorf("mode %o spelled %q, want %q", uint32(m), got, want)
		}
	}
}
