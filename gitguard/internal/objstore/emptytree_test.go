package objstore

import (
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// EmptyTree is written out as bytes (no decoding at start): it must be the id git gives a
// tree of no entries.
func TestEmptyTreeIsGits(t *testing.T) {
	if got := plumbing.ComputeHash(plumbing.TreeObject, nil); got != EmptyTree {
		t.Errorf("EmptyTree is %s, the empty tree's id is %s", EmptyTree, got)
	}
}
