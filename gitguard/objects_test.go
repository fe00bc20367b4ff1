package gitguard_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// poison overwrites the loose object id with the loose object of other, a
// valid object whose content hashes to something else.
func poison(t *testing.T, r *gittest.Repo, id, other string) {
	t.Helper()
	obj := func(h string) string { return r.Path(filepath.Join(".git/objects", h[:2], h[2:])) }
	data, err := os.ReadFile(obj(other))
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(obj(id), 0o644)
	if err := os.WriteFile(obj(id), data, 0o444); err != nil {
		t.Fatal(err)
	}
}

// Every object read to decide or to materialize is checked against its id.
func TestCorruptObjects(t *testing.T) {
	tests := []struct {
		name   string
		target string // rev-parse expression of the object to poison
		with   string // shell printing the id of a stored object to put in its place
		typ    plumbing.ObjectType
		path   string // the path the error names
		op     string // check, commit or materialize
	}{
		{"blob materialized", "HEAD:benchmark.py", "echo 'score = 9' | git hash-object -w --stdin", plumbing.BlobObject, "benchmark.py", "materialize"},
		{"blob of a symlink materialized", "HEAD:link", "printf elsewhere | git hash-object -w --stdin", plumbing.BlobObject, "link", "materialize"},
		{"tree materialized", "HEAD:tasks", "printf '100644 blob e69de29bb2d1d6434b8b29ae775a8c2d48c53391\\tx\\n' | git mktree --missing", plumbing.TreeObject, "", "materialize"},
		{"commit read by the check", "HEAD", "git commit-tree -m forged HEAD^{tree}", plumbing.CommitObject, "", "check"},
		{"commit read for the ledger and the loop", "HEAD", "git commit-tree -m forged HEAD^{tree}", plumbing.CommitObject, "", "commit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := loopProject(t)
			r.Symlink("benchmark.py", "link")
			r.Commit("link")
			id := strings.TrimSpace(r.Git("rev-parse", tc.target))
			other, err := r.Sh(tc.with)
			if err != nil {
				t.Fatal(err)
			}
			poison(t, r, id, strings.TrimSpace(other))
			g := open(t, r)
			_, tree, herr := g.Head()
			switch tc.op {
			case "check":
				_, err = g.Check(gitguard.Options{Allow: loopAllow})
			case "commit":
				_, err = g.Commit(plumbing.NewHash(id))
			default:
				if herr != nil {
					t.Fatal(herr)
				}
				err = g.Materialize(tree, filepath.Join(t.TempDir(), "room"))
			}
			var ce *gitguard.CorruptObjectError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a corrupt object", err)
			}
			if ce.Type != tc.typ || ce.ID.String() != id || ce.Path != tc.path {
				t.Errorf("got %s %s for %q, want %s %s for %q", ce.Type, ce.ID, ce.Path, tc.typ, id, tc.path)
			}
			if !strings.Contains(err.Error(), "object store corrupt: "+tc.typ.String()+" "+id) {
				t.Errorf("message %q", err)
			}
		})
	}
}
