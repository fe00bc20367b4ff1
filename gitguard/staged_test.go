package gitguard_test

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hgate/hgate/gitguard"
)

// TestCheckStaged covers what the hook's own tests (hooks/precommit_test.go)
// do not: the texts built from the guard's helpers and the refusals.
func TestCheckStaged(t *testing.T) {
	tests := []struct {
		name    string
		setup   string
		index   string
		want    string // "path:kind detail | hint" lines
		wantErr string
	}{
		{name: "unstaged edits are not looked at", setup: "echo x >> benchmark.py; echo n > new.txt"},
		{name: "rename", setup: "git mv benchmark.py bench.py",
			want: "bench.py:added staged | git rm --cached -q -- bench.py\nbenchmark.py:renamed staged; renamed to bench.py | git restore --staged -- benchmark.py\n"},
		{name: "executable became a symlink on an allowed path", setup: "chmod +x PROGRAM.md; git add PROGRAM.md; git commit -qm x; rm PROGRAM.md; ln -s notes/idea.md PROGRAM.md; git add PROGRAM.md",
			want: "PROGRAM.md:type staged; regular file became a symlink | git restore --staged -- PROGRAM.md\n"},
		{name: "absolute symlink target", setup: "ln -s /etc/passwd notes/x; git add notes/x",
			want: "notes/x:added staged; symlink to /etc/passwd points outside the repository | git rm --cached -q -- notes/x\n"},
		{name: "path that reads as an option", setup: "echo n > ./-n; git add -- -n",
			want: "-n:added staged | git rm --cached -q -- -n\n"},
		{name: "file became a folder", setup: "git rm -q benchmark.py; mkdir benchmark.py; echo x > benchmark.py/x; git add benchmark.py/x",
			want: "benchmark.py:deleted staged | git restore --staged -- benchmark.py\nbenchmark.py/x:added staged | git rm --cached -q -- benchmark.py/x\n"},
		{name: "temporary index", setup: "cp .git/index .git/tmp; echo x >> benchmark.py; GIT_INDEX_FILE=.git/tmp git add benchmark.py", index: ".git/tmp",
			want: "benchmark.py:modified staged | git restore --staged -- benchmark.py\n"},
		{name: "unmerged", setup: "git rm -q --cached benchmark.py; h=$(git hash-object -w benchmark.py); printf '100644 %s 1\\tbenchmark.py\\n100644 %s 2\\tbenchmark.py\\n' $h $h | git update-index --index-info",
			wantErr: "benchmark.py is unmerged: resolve the conflict and stage the result first"},
		// update-index keeps the stage 0 entry beside the new stages.
		{name: "merged and unmerged", setup: "h=$(git hash-object -w benchmark.py); printf '100644 %s 1\\tbenchmark.py\\n100644 %s 2\\tbenchmark.py\\n' $h $h | git update-index --index-info",
			wantErr: "benchmark.py is unmerged: resolve the conflict and stage the result first"},
		{name: "sparse index", setup: "git sparse-checkout set --sparse-index --cone agent && git config --unset extensions.worktreeConfig", wantErr: "sparse index"},
		{name: "split index", setup: "git update-index --split-index; echo x >> benchmark.py; git add benchmark.py; git rm -q --cached tasks/t1/check.sh",
			want: "benchmark.py:modified staged | git restore --staged -- benchmark.py\ntasks/t1/check.sh:deleted staged | git restore --staged -- tasks/t1/check.sh\n"},
		{name: "missing index", index: ".git/none", wantErr: "read index"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newProject(t)
			if out, err := r.Sh(tt.setup); err != nil {
				t.Fatalf("setup: %v\n%s", err, out)
			}
			g, err := gitguard.Open(r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := g.CheckStaged(allow, tt.index)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("CheckStaged = %+v, %v; want an error holding %q", vs, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, v := range vs {
				b.WriteString(v.Path + ":" + v.Kind + " " + v.Detail + " | " + v.Hint + "\n")
			}
			if b.String() != tt.want {
				t.Fatalf("got:\n%swant:\n%s", b.String(), tt.want)
			}
		})
	}
}

// TestCheckStagedUnborn checks the first commit: everything staged is added
// and unstaged without naming HEAD.
func TestCheckStagedUnborn(t *testing.T) {
	r := newProject(t)
	if out, err := r.Sh("rm -rf .git && git init -q -b main && git add -A"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	g, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := g.CheckStaged([]string{"*", "!benchmark.py"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Path != "benchmark.py" || vs[0].Kind != "added" || vs[0].Hint != "git rm --cached -q -- benchmark.py" {
		t.Fatalf("violations = %+v", vs)
	}
}

// TestCheckStagedCacheTree forges the index's cache-tree extension: entries
// as in HEAD, and a valid root node naming a tree with benchmark.py edited.
// git commit takes the node's tree, so the hook must judge that tree, not
// the entries. A node covering another number of entries than the index
// holds is refused: git would skip entries the hook cannot account for.
func TestCheckStagedCacheTree(t *testing.T) {
	r := newProject(t)
	// indexA: benchmark.py edited, cache tree written; the index: as HEAD.
	if out, err := r.Sh("echo evil >> benchmark.py; git add benchmark.py; git write-tree >/dev/null; cp .git/index .git/indexA; git reset -q; git checkout -q benchmark.py; git write-tree >/dev/null"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	forge := func(treeExt func([]byte) []byte) {
		t.Helper()
		a, err := os.ReadFile(r.Path(".git/indexA"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(r.Path(".git/index"))
		if err != nil {
			t.Fatal(err)
		}
		ia, ib := bytes.LastIndex(a, []byte("TREE")), bytes.LastIndex(b, []byte("TREE"))
		if ia < 0 || ib < 0 {
			t.Fatal("no cache-tree extension")
		}
		out := append(b[:ib:ib], treeExt(a[ia:len(a)-sha1.Size])...)
		sum := sha1.Sum(out)
		if err := os.WriteFile(r.Path(".git/index"), append(out, sum[:]...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func() ([]gitguard.Violation, error) {
		g, err := gitguard.Open(r.Dir)
		if err != nil {
			t.Fatal(err)
		}
		return g.CheckStaged(allow, "")
	}
	forge(func(ext []byte) []byte { return ext })
	if out, err := r.Sh("git diff --cached --name-only"); err != nil || out != "" {
		t.Fatalf("the entries should match HEAD: %v %q", err, out)
	}
	vs, err := check()
	if err != nil || len(vs) != 1 || vs[0].Path != "benchmark.py" || vs[0].Kind != "modified" {
		t.Fatalf("CheckStaged = %+v, %v; want benchmark.py modified", vs, err)
	}
	// What git commits from this index, the reason for the check.
	if out, err := r.Sh("git commit -q --allow-empty -m forged && git show HEAD:benchmark.py | tail -n 1 && git reset -q --soft HEAD~1"); err != nil || out != "evil\n" {
		t.Fatalf("git commit: %v %q", err, out)
	}

	// The root node's count ("NNN" after "TREE", size, "\0") one too many.
	forge(func(ext []byte) []byte {
		c := bytes.IndexByte(ext[9:], ' ') + 9
		n, err := strconv.Atoi(string(ext[9:c]))
		if err != nil {
			t.Fatalf("root count: %v", err)
		}
		body := append([]byte("\x00"+strconv.Itoa(n+1)), ext[c:]...)
		out := append([]byte("TREE"), binary.BigEndian.AppendUint32(nil, uint32(len(body)))...)
		return append(out, body...)
	})
	if vs, err := check(); err == nil || !strings.Contains(err.Error(), "cache-tree extension: its node for the root covers") {
		t.Fatalf("CheckStaged = %+v, %v; want the count refused", vs, err)
	}
}
