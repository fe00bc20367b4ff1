package gate

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/hgate/hgate/config"
)

// TestOutsidePaths: clean_room.read and test_only paths inside the repository, inside a
// carried path, or holding the repository are not recorded in the carry manifest's
// outside part (docs/security/integrity.md, Data outside the repository); every other
// path is, absolute, in the order the configuration names them.
func TestOutsidePaths(t *testing.T) {
	root := filepath.Join(t.TempDir(), "repo")
	other := filepath.Join(filepath.Dir(root), "repo-data") // a sibling whose name starts as root's
	cr := config.CleanRoom{
		Carry:    []string{"data/"},
		Read:     []string{"untracked-data", "data/answers", "/srv/model", filepath.Dir(root), other},
		TestOnly: []string{"../answers", "/srv/answers/t1", root},
	}
	got, err := outsidePaths(cr, root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/srv/model", other, filepath.Join(filepath.Dir(root), "answers"), "/srv/answers/t1"}
	if !slices.Equal(got, want) {
		t.Errorf("outside paths %q, want %q", got, want)
	}
}
