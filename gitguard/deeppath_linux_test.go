package gitguard_test

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hgate/hgate/gitguard"
)

// TestDeepAllowedPath: a file 2200 folders deep on an allowed path (its path 4,410 bytes,
// past PATH_MAX): the first folder on the way whose path passes MaxPathBytes is the
// violation, its length named, never read; the candidate tree and a set-aside attempt
// keep HEAD's entries, and the restore removes the tree by descriptor. Reading it by name
// used to fail ("file name too long") and stop the loop.
func TestDeepAllowedPath(t *testing.T) {
	r := newProject(t)
	fd, err := unix.Open(r.Path("notes"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range 2200 {
		if err := unix.Mkdirat(fd, "a", 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, "a", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	f, err := unix.Openat(fd, "s.sh", unix.O_CREAT|unix.O_WRONLY, 0o644)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	unix.Write(f, []byte("x\n"))
	unix.Close(f)

	opts := gitguard.Options{Allow: allow}
	deep := "notes/" + strings.Repeat("a/", (gitguard.MaxPathBytes-5)/2) + "a" // "notes/a/…/a", 1025 bytes
	vs := check(t, r, opts)
	if got, want := summary(vs), deep+":untracked\n"; got != want {
		t.Fatalf("violations:\n%.200s\nwant:\n%.200s", got, want)
	}
	if d := vs[0].Detail; !strings.Contains(d, "a path of 1025 bytes, over the 1024 a clean room can hold: not read") {
		t.Errorf("detail %q", d)
	}
	g, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := g.CandidateTree(opts)
	if err != nil {
		t.Fatalf("candidate: %.300v", err)
	}
	if _, headTree, err := g.Head(); err != nil || tree != headTree {
		t.Errorf("candidate tree %s, want HEAD's %s (%v)", tree, headTree, err)
	}
	c, err := g.SaveAttemptAndRestore(opts, "refs/hgate/attempts/x/1", "attempt\n", gitguard.Signature{Name: "t", Email: "t@t"})
	if err != nil {
		t.Fatalf("set aside: %.300v", err)
	}
	if got := r.Git("ls-tree", "-r", "--name-only", c.String()); strings.Contains(got, "notes/a/") {
		t.Errorf("the attempt holds the deep file")
	}
	if _, err := os.Lstat(r.Path("notes/a")); !os.IsNotExist(err) {
		t.Errorf("notes/a after the restore: %v", err)
	}
	if st := gitStatus(t, r); st != "" {
		t.Errorf("not restored:\n%.300s", st)
	}
}
