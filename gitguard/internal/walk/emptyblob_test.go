package walk

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// The empty blob's id is written out as bytes (no decoding at start): it must be the id git
// gives a blob of no bytes.
func TestEmptyBlobIsGits(t *testing.T) {
	if got := plumbing.ComputeHash(plumbing.BlobObject, nil); got != emptyBlob {
		t.Errorf("emptyBlob is %s, the empty blob's id is %s", emptyBlob, got)
	}
}
