package index

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReadMappedMatchesRead: the index read through a mapping is the one read into
// memory, for each version git writes; a corrupt or empty file is refused the same way.
func TestReadMappedMatchesRead(t *testing.T) {
	dir := t.TempDir()
	for i, data := range seedIndexes(t) {
		path := filepath.Join(dir, "index")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		read, err := Read(path, dir)
		if err != nil {
			t.Fatalf("index %d: Read: %v", i, err)
		}
		mapped, err := ReadMapped(path, dir)
		if err != nil {
			t.Fatalf("index %d: ReadMapped: %v", i, err)
		}
		if len(mapped.Entries) == 0 || !reflect.DeepEqual(read, mapped) {
			t.Fatalf("index %d: mapped %+v\nread %+v", i, mapped, read)
		}
	}
	for name, data := range map[string][]byte{"empty": nil, "truncated": append(seedIndexes(t)[0][:100:100], make([]byte, 20)...)} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadMapped(path, dir); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: ReadMapped: %v, want the index refused as corrupt", name, err)
		}
	}
	if _, err := ReadMapped(filepath.Join(dir, "absent"), dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("absent: ReadMapped: %v", err)
	}
}
