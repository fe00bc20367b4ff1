package gittest

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// snapshot is a folder's entries by slash path: type and permissions, modification time
// (but for symbolic links, whose time cp -a keeps and Copy does not need), content or
// link target.
func snapshot(t *testing.T, dir string, times bool) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[filepath.ToSlash(rel)] = v + " -> " + target
			return nil
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(data)
		}
		if times {
			v += " " + info.ModTime().Format(time.RFC3339Nano)
		}
		m[filepath.ToSlash(rel)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameSnapshots(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s: %s is %q, want %q", what, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s is extra", what, k)
		}
	}
}

// New writes what git init writes, and git takes it as a repository.
func TestNewIsGitInit(t *testing.T) {
	want := t.TempDir()
	cmd := exec.Command("git", "init", "-q", "-b", "main")
	cmd.Dir, cmd.Env = want, Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	r := New(t)
	sameSnapshots(t, "New", snapshot(t, r.Dir, false), snapshot(t, want, false))
	r.Write("a.txt", "a\n")
	r.Commit("first")
	if got := r.Git("log", "--format=%s", "main"); got != "first\n" {
		t.Errorf("git log on main: %q", got)
	}
}

// Copy copies as cp -a does: permissions (a read-only folder and file, an executable),
// modification times, symbolic links (dangling and relative ones too) and content.
func TestCopyAsCpA(t *testing.T) {
	src := t.TempDir()
	for p, c := range map[string]string{"a.txt": "a\n", "sub/x.sh": "exit 0\n", "ro/f": "f\n", "sub/deep/private": "p\n", "empty": ""} {
		full := filepath.Join(src, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(filepath.Join(src, "sub/x.sh"), 0o755))
	must(os.Chmod(filepath.Join(src, "sub/deep/private"), 0o600))
	must(os.Mkdir(filepath.Join(src, "emptydir"), 0o750))
	must(os.Symlink("sub/x.sh", filepath.Join(src, "link")))
	must(os.Symlink("/nonexistent/target", filepath.Join(src, "sub/dangling")))
	old := time.Date(2020, 1, 2, 3, 4, 5, 6000, time.UTC)
	must(os.Chtimes(filepath.Join(src, "a.txt"), old, old))
	must(os.Chmod(filepath.Join(src, "ro/f"), 0o444))
	must(os.Chtimes(filepath.Join(src, "sub/deep"), old, old))
	must(os.Chmod(filepath.Join(src, "ro"), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Join(src, "ro"), 0o755) })

	want := t.TempDir()
	if out, err := exec.Command("cp", "-a", src+"/.", want).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(want, "ro"), 0o755) })
	r := Copy(t, src)
	t.Cleanup(func() { os.Chmod(r.Path("ro"), 0o755) })
	got := snapshot(t, r.Dir, true)
	sameSnapshots(t, "Copy", got, snapshot(t, want, true))
	if !strings.HasPrefix(got["a.txt"], "-rw-r--r-- a\n 2020-01-02T03:04:05.000006Z") {
		t.Errorf("a.txt: %q", got["a.txt"])
	}
}

// Head reads what rev-parse HEAD prints: on a branch (a loose ref, then packed), and
// detached.
func TestHeadAsRevParse(t *testing.T) {
	r := New(t)
	r.Write("a.txt", "1\n")
	first := r.Commit("one")
	r.Write("a.txt", "2\n")
	r.Commit("two")
	for _, step := range []string{"loose", "packed", "detached"} {
		switch step {
		case "packed":
			r.Git("pack-refs", "--all")
			if _, err := os.Stat(r.Path(".git/refs/heads/main")); err == nil {
				t.Fatal("pack-refs left the loose ref")
			}
		case "detached":
			r.Git("checkout", "-q", first)
		}
		want := strings.TrimSpace(r.Git("rev-parse", "HEAD"))
		if h, ok := readHead(r.Path(".git")); !ok || h != want {
			t.Errorf("%s: readHead %q %v, want %q", step, h, ok, want)
		}
		if got := r.Head(); got != want {
			t.Errorf("%s: Head %q, want %q", step, got, want)
		}
	}
	if h, ok := readHead(New(t).Path(".git")); ok {
		t.Errorf("unborn branch: readHead %q, want none", h)
	}
}

// TestMemoryTemp: with TMPDIR unset, MemoryTemp points it at a new folder of its own in
// /dev/shm (where there is one) and its remover removes that folder and unsets TMPDIR;
// with TMPDIR set, it changes nothing.
func TestMemoryTemp(t *testing.T) {
	t.Setenv("TMPDIR", "/somewhere/else")
	MemoryTemp()()
	if got := os.Getenv("TMPDIR"); got != "/somewhere/else" {
		t.Fatalf("TMPDIR = %q after MemoryTemp with TMPDIR set", got)
	}
	os.Unsetenv("TMPDIR") // t.Setenv restores it
	if fi, err := os.Stat(memoryParent); err != nil || !fi.IsDir() {
		t.Skipf("no %s here: MemoryTemp leaves the default temporary directory", memoryParent)
	}
	remove := MemoryTemp()
	dir := os.Getenv("TMPDIR")
	if filepath.Dir(dir) != memoryParent || !strings.HasPrefix(filepath.Base(dir), memoryPrefix) {
		t.Fatalf("TMPDIR = %q, want a %s* folder in %s", dir, memoryPrefix, memoryParent)
	}
	if got := t.TempDir(); !strings.HasPrefix(got, dir+"/") {
		t.Errorf("t.TempDir() = %q, not in %s", got, dir)
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there after the remover: %v", dir, err)
	}
	if v, ok := os.LookupEnv("TMPDIR"); ok {
		t.Errorf("TMPDIR = %q after the remover, want unset", v)
	}
}

// TestFsckChecksAsGit: Fsck finds what git fsck finds: a corrupt loose object, and a
// corrupt commit-graph where the repository has one (its verification is turned off only
// where there is no commit-graph to verify).
func TestFsckChecksAsGit(t *testing.T) {
	r := New(t)
	r.Write("a.txt", "a\n")
	r.Commit("one")
	if out, err := r.Fsck("--no-progress"); err != nil {
		t.Fatalf("Fsck of a sound repository: %v\n%s", err, out)
	}

	g := Copy(t, r.Dir)
	g.Git("commit-graph", "write", "--reachable")
	graph := g.Path(".git/objects/info/commit-graph")
	data, err := os.ReadFile(graph)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Fsck("--no-progress"); err != nil {
		t.Fatalf("Fsck with a sound commit-graph: %v", err)
	}
	data[len(data)-30] ^= 0xff // inside the checksummed content
	os.Chmod(graph, 0o644)
	if err := os.WriteFile(graph, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.TryGit("fsck", "--no-progress"); err == nil {
		t.Fatal("git fsck accepted the corrupt commit-graph: the test checks nothing")
	}
	if _, err := g.Fsck("--no-progress"); err == nil {
		t.Error("Fsck accepted a corrupt commit-graph git fsck refuses")
	}

	head := r.Head()
	obj := r.Path(".git/objects/" + head[:2] + "/" + head[2:])
	os.Chmod(obj, 0o644)
	if err := os.WriteFile(obj, []byte("not zlib"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Fsck("--no-progress"); err == nil {
		t.Error("Fsck accepted a corrupt commit object")
	}
}
