//go:build unix

package index

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// TestReadMappedTruncatedFaults: an index truncated while mapped is never read as
// zeros or as stale bytes: touching an entry's path faults (SIGBUS), which ends a
// process that has not asked to recover (Go exits 2, the guard's "could not answer").
var faultSink string // keeps the read of the path from being optimised away

func TestReadMappedTruncatedFaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(path, seedIndexes(t)[0], 0o644); err != nil {
		t.Fatal(err)
	}
	idx, err := ReadMapped(path, filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	faulted := func() (f bool) {
		defer func() { f = recover() != nil }()
		faultSink = strings.Clone(idx.Entries[len(idx.Entries)-1].Path)
		return false
	}()
	if !faulted {
		t.Fatal("a truncated mapped index was read without a fault")
	}
}
