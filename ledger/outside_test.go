package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/digest"
)

// TestBuildOutside: a small folder is hashed under the key, one past MaxHashBytes only
// listed (a sparse file stands for a model), and each change is named.
func TestBuildOutside(t *testing.T) {
	key, err := digest.Create(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	small, big := filepath.Join(dir, "answers"), filepath.Join(dir, "model")
	for _, d := range []string{small, big} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(small, "t1"), "yes\n")
	write(filepath.Join(big, "weights"), "")
	if err := os.Truncate(filepath.Join(big, "weights"), MaxHashBytes+1); err != nil {
		t.Fatal(err)
	}
	paths := []string{small, big, filepath.Join(dir, "missing")}
	o, err := BuildOutside(paths, key)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Listed) != 1 || o.Listed[0] != big || len(o.Files) != 2 {
		t.Fatalf("listed %v, files %+v", o.Listed, o.Files)
	}
	if f := o.Files[0]; !digest.Keyed(f.SHA256) || f.MTime != "" {
		t.Errorf("the small folder's file: %+v, want a keyed digest", f)
	}
	if f := o.Files[1]; f.SHA256 != "" || f.Size != MaxHashBytes+1 || f.MTime == "" {
		t.Errorf("the big folder's file: %+v, want its size and mtime", f)
	}
	if plain, _ := BuildOutside(paths, nil); plain.Files[0].SHA256 != "" || len(plain.Listed) != len(paths) {
		t.Errorf("without a key: %+v, want only a listing", plain)
	}
	if d := o.Differences(o); len(d) != 0 {
		t.Errorf("no change: %v", d)
	}
	write(filepath.Join(small, "t1"), "no\n")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(big, "weights"), later, later); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(small, "t2"), "new\n")
	now, err := BuildOutside(paths, key)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(o.Differences(now), "\n")
	for _, want := range []string{"answers/t1 changed since prepare recorded it (digest ", "answers/t2 added", "model/weights changed since prepare recorded it (size "} {
		if !strings.Contains(got, want) {
			t.Errorf("differences %q lack %q", got, want)
		}
	}
}
