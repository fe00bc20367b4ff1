package gitguard

import (
	"strings"
	"testing"

	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/internal/gittest"
)

// A record that deletes the last file commits the empty tree, and stores it: git fsck
// finds nothing missing, and the log names the deleted file.
func TestCommitFilesEmptyTree(t *testing.T) {
	g := gittest.New(t)
	r := recOpen(t, g)
	if _, err := r.CommitFiles(recTestRef, map[string][]byte{"a/b.txt": []byte("1")}, "add"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.CommitFiles(recTestRef, map[string][]byte{"a/b.txt": nil}, "remove"); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(g.Git("rev-parse", recTestRef+"^{tree}")); got != objstore.EmptyTree.String() {
		t.Fatalf("tree %s, want the empty tree", got)
	}
	if out, err := g.Fsck("--strict"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	log, err := r.LogRef(recTestRef, 1)
	if err != nil || len(log) != 1 || strings.Join(log[0].Changed, ",") != "a/b.txt" {
		t.Fatalf("log %+v, %v", log, err)
	}
}
