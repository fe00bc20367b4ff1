//go:build unix

package fsafe

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// fixture: root/ with a file f and a folder d holding f; outside/ with secret, the
// target every planted link points at.
func fixture(t *testing.T) (root, outside string, r *Root) {
	t.Helper()
	base := t.TempDir()
	root, outside = filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, "d"), outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "f"), "mine")
	write(t, filepath.Join(root, "d", "f"), "mine too")
	write(t, filepath.Join(outside, "secret"), "secret")
	r, err := OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return root, outside, r
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bothWays runs f with openat2 and with the component-wise fallback.
func bothWays(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", f)
	t.Run("fallback", func(t *testing.T) {
		old := noOpenat2.Load()
		noOpenat2.Store(true)
		defer noOpenat2.Store(old)
		f(t)
	})
}

func untouched(t *testing.T, outside string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(outside, "secret"))
	if err != nil || string(data) != "secret" {
		t.Fatalf("the link's target changed: %q, %v", data, err)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Fatalf("something was created beside the link's target: %v", ents)
	}
}

func TestReadsOnlyTheFolder(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, outside, r := fixture(t)
		if data, err := r.ReadFile("d/f", 100); err != nil || string(data) != "mine too" {
			t.Fatalf("plain read: %q, %v", data, err)
		}
		os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "lf"))
		os.Symlink(outside, filepath.Join(root, "ld"))
		os.Symlink("../outside/secret", filepath.Join(root, "d", "rel"))
		for _, name := range []string{"lf", "ld/secret", "d/rel", "../outside/secret", "/etc/passwd", "d/../../outside/secret"} {
			if data, err := r.ReadFile(name, 100); err == nil || bytes.Contains(data, []byte("secret")) {
				t.Errorf("ReadFile(%q) = %q, %v: followed a link or left the folder", name, data, err)
			}
		}
	})
}

func TestRefusesSpecialFiles(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, outside, r := fixture(t)
		if err := os.Link(filepath.Join(outside, "secret"), filepath.Join(root, "hard")); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
			t.Fatal(err)
		}
		sparse, err := os.Create(filepath.Join(root, "huge"))
		if err != nil {
			t.Fatal(err)
		}
		sparse.Truncate(1 << 40)
		sparse.Close()
		for name, want := range map[string]error{"hard": ErrLinked, "fifo": ErrNotRegular, "d": ErrNotRegular, "huge": ErrTooLarge} {
			// A FIFO opened for reading without O_NONBLOCK would block here for ever.
			if data, err := r.ReadFile(name, 1<<20); !errors.Is(err, want) || len(data) > 0 {
				t.Errorf("ReadFile(%q) = %d bytes, %v; want %v", name, len(data), err, want)
			}
		}
		// Opened for writing, a FIFO without a reader fails at once (ENXIO), never blocks.
		if _, err := r.Append("fifo"); err == nil {
			t.Error("Append(fifo) succeeded")
		}
	})
}

func TestCreatesOnlyNewFiles(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, outside, r := fixture(t)
		os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "lf"))
		os.Symlink(filepath.Join(outside, "nothing"), filepath.Join(root, "dangling"))
		os.Symlink(outside, filepath.Join(root, "ld"))
		for _, name := range []string{"f", "lf", "dangling", "ld/new", "d"} {
			if err := r.WriteFile(name, []byte("agent's text"), 0o644); err == nil {
				t.Errorf("WriteFile(%q) succeeded over something already there", name)
			}
		}
		if err := r.MkdirAll("ld/sub", 0o755); err == nil {
			t.Error("MkdirAll through a link to a folder succeeded")
		}
		if err := r.WriteFile("d/new", []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		untouched(t, outside)
	})
}

func TestReplaceRemoveRenameNeverFollow(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, outside, r := fixture(t)
		os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "lf"))
		os.Symlink(outside, filepath.Join(root, "ld"))
		if err := r.Replace("lf", strings.NewReader("trace"), 0o644); err != nil {
			t.Fatal(err)
		}
		if data, err := r.ReadFile("lf", 10); string(data) != "trace" {
			t.Fatalf("after Replace: %q, %v", data, err)
		}
		if err := r.Rename("f", "ld"); err != nil {
			t.Fatal(err) // replaces the link itself
		}
		if err := r.Remove("ld"); err != nil {
			t.Fatal(err)
		}
		os.Symlink(outside, filepath.Join(root, "ld2"))
		if err := r.RemoveAll("ld2"); err != nil {
			t.Fatal(err)
		}
		if err := r.Chmod("lf", 0o600); err != nil {
			t.Fatal(err)
		}
		os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "d", "l"))
		if err := r.Chmod("d/l", 0o777); err == nil {
			t.Error("Chmod of a link succeeded")
		}
		if err := r.RemoveAll("d"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Lstat(filepath.Join(root, "d")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("RemoveAll left d: %v", err)
		}
		untouched(t, outside)
		if fi, _ := os.Stat(filepath.Join(outside, "secret")); fi.Mode().Perm() != 0o644 {
			t.Fatalf("the target's mode changed: %v", fi.Mode())
		}
	})
}

func TestRootMustNotBeALink(t *testing.T) {
	root, _, _ := fixture(t)
	l := filepath.Join(t.TempDir(), "l")
	os.Symlink(root, l)
	if r, err := OpenRoot(l); err == nil {
		r.Close()
		t.Fatal("OpenRoot followed a link")
	}
}

func TestReadDirListsLinksAsLinks(t *testing.T) {
	root, outside, r := fixture(t)
	os.Symlink(outside, filepath.Join(root, "ld"))
	ents, err := r.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "ld" && e.Type()&fs.ModeSymlink == 0 {
			t.Fatalf("ld listed as %v", e.Type())
		}
	}
	if _, err := r.ReadDir("ld"); err == nil {
		t.Fatal("ReadDir followed a link")
	}
}

func TestTempFileHasNoName(t *testing.T) {
	dir := t.TempDir()
	f, err := TempFile(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("trace"); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("TempFile left a name to plant at: %v", ents)
	}
}

func TestWalkNeverEntersLinks(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, outside, r := fixture(t)
		os.Symlink(outside, filepath.Join(root, "d", "ld"))
		var seen []string
		err := r.Walk(func(name string, d fs.DirEntry) error {
			seen = append(seen, name)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(seen, " "); got != "d d/f d/ld f" {
			t.Fatalf("Walk saw %q, want %q", got, "d d/f d/ld f")
		}
		if target, err := r.Readlink("d/ld"); err != nil || target != outside {
			t.Fatalf("Readlink = %q, %v", target, err)
		}
	})
}

// TestReplaceNamesCannotBeGuessed: a sandboxed process that plants something at every
// temporary name an hgate of this pid would try (".<name>.hgate-<pid>-<i>", as Replace
// named them before) does not stop Replace; what is planted stays as it was.
func TestReplaceNamesCannotBeGuessed(t *testing.T) {
	root, outside, r := fixture(t)
	for i := range 100 {
		os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, fmt.Sprintf(".lf.hgate-%d-%d", os.Getpid(), i)))
	}
	if err := r.Replace("lf", strings.NewReader("trace"), 0o644); err != nil {
		t.Fatalf("Replace with every guessable name planted: %v", err)
	}
	if data, err := r.ReadFile("lf", 10); string(data) != "trace" {
		t.Fatalf("after Replace: %q, %v", data, err)
	}
	untouched(t, outside)
}

// Lstat and Symlink act on the name itself, never through a link at a parent folder.
func TestLstatSymlinkNeverFollowParent(t *testing.T) {
	root, outside, r := fixture(t)
	if err := os.Symlink(outside, filepath.Join(root, "via")); err != nil {
		t.Fatal(err)
	}
	if err := r.Symlink("target", "via/planted"); err == nil {
		t.Error("Symlink made a link through a linked parent folder")
	}
	if _, err := os.Lstat(filepath.Join(outside, "planted")); err == nil {
		t.Error("a link appeared outside the root")
	}
	if _, err := r.Lstat("via/secret"); err == nil {
		t.Error("Lstat described a file through a linked parent folder")
	}
	if err := r.Symlink("some/target", "d/l"); err != nil {
		t.Fatal(err)
	}
	fi, err := r.Lstat("d/l")
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("Lstat(d/l) = %v, %v; want a link", fi, err)
	}
	if got, _ := os.Readlink(filepath.Join(root, "d", "l")); got != "some/target" {
		t.Errorf("link target %q", got)
	}
	if fi, err := r.Lstat("d/f"); err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len("mine too")) {
		t.Errorf("Lstat(d/f) = %v, %v", fi, err)
	}
}

// Refused tells what a sandboxed process left at a name (every kind the planting scripts
// plant) from a name that is missing.
func TestRefused(t *testing.T) {
	bothWays(t, func(t *testing.T) {
		root, outside, r := fixture(t)
		os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link"))
		os.Link(filepath.Join(outside, "secret"), filepath.Join(root, "hard"))
		syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)
		write(t, filepath.Join(root, "huge"), "")
		os.Truncate(filepath.Join(root, "huge"), 64<<30)
		for _, name := range []string{"link", "hard", "fifo", "d", "huge", "f/under", "link/under"} {
			if _, err := r.ReadFile(name, 1<<20); !Refused(err) {
				t.Errorf("ReadFile(%q): %v; want a refusal", name, err)
			}
		}
		if _, err := r.ReadFile("missing", 1<<20); Refused(err) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadFile(missing): %v; want not exist, not a refusal", err)
		}
	})
}

// A tree deeper than the descriptors a process may hold, and past PATH_MAX, with files
// and a link to outside along the way: RemoveAll removes it all and follows nothing.
func TestRemoveAllDeepTree(t *testing.T) {
	root, outside, r := fixture(t)
	const depth = 2500 // 5,000 bytes of path: past PATH_MAX, and 20 times the limit below
	fd, err := syscall.Open(filepath.Join(root, "d"), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range depth {
		if i%500 == 0 {
			os.Symlink(outside, fmt.Sprintf("/proc/self/fd/%d/l", fd))
			os.WriteFile(fmt.Sprintf("/proc/self/fd/%d/f", fd), []byte("x"), 0o644)
			syscall.Mkdir(fmt.Sprintf("/proc/self/fd/%d/side", fd), 0o755)
		}
		if err := syscall.Mkdir(fmt.Sprintf("/proc/self/fd/%d/a", fd), 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := syscall.Open(fmt.Sprintf("/proc/self/fd/%d/a", fd), syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
		syscall.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	syscall.Close(fd)

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	low := lim
	low.Cur = 128
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	err = r.RemoveAll("d")
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
	if err != nil {
		t.Fatalf("RemoveAll: %.300v", err)
	}
	if ents, _ := os.ReadDir(root); len(ents) != 1 || ents[0].Name() != "f" {
		t.Fatalf("left in root: %v", ents)
	}
	untouched(t, outside)
}

// TestRemoveAllLockedFolders: folders a task made unreadable, read-only or unsearchable
// (mode 000, 555, 500, 300) go too, as their owner: RemoveAll makes each its owner's first.
// Root needs no permission, so as root the test runs itself again as nobody.
func TestRemoveAllLockedFolders(t *testing.T) {
	if os.Geteuid() == 0 {
		asNobody(t, "TestRemoveAllLockedFolders")
		return
	}
	root, _, r := fixture(t)
	for _, mode := range []os.FileMode{0o000, 0o555, 0o500, 0o300} {
		d := filepath.Join(root, "d", fmt.Sprintf("m%o", mode), "sub")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(d, "f"), "x")
		os.Chmod(d, mode)
		os.Chmod(filepath.Dir(d), mode)
	}
	if err := r.RemoveAll("d"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(root, "d")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("RemoveAll left d: %v", err)
	}
}

// asNobody runs the test binary's test name again as uid 65534, in a folder it owns.
func asNobody(t *testing.T, name string) {
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv is missing: cannot run as an unprivileged user")
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	os.Chmod(filepath.Dir(dir), 0o755) // the test's own folder, which TempDir makes 700
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Skipf("%s is not searchable by others", d)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self) // go's build folder is not nobody's to read
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "fsafe.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	os.Mkdir(tmp, 0o755)
	os.Chown(tmp, 65534, 65534)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^"+name+"$", "-test.v")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--- PASS: "+name)) {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// TestOpenDirOwned: a folder whose owner's rights were taken away (an agent's chmod of a
// folder of its write set) opens again, as its owner, made 0700; a link still does not.
// As root the test runs itself again as nobody, as TestRemoveAllLockedFolders does.
func TestOpenDirOwned(t *testing.T) {
	if os.Geteuid() == 0 {
		asNobody(t, "TestOpenDirOwned")
		return
	}
	root, outside, r := fixture(t)
	for _, mode := range []os.FileMode{0o000, 0o100, 0o500, 0o300} {
		d := filepath.Join(root, fmt.Sprintf("m%o", mode))
		os.Mkdir(d, 0o700)
		write(t, filepath.Join(d, "f"), "x")
		os.Chmod(d, mode)
		if _, err := r.OpenDir(filepath.Base(d)); mode != 0o500 && !errors.Is(err, fs.ErrPermission) {
			t.Fatalf("%o: OpenDir: %v", mode, err)
		}
		got, err := r.OpenDirOwned(filepath.Base(d))
		if err != nil {
			t.Fatalf("%o: %v", mode, err)
		}
		data, err := got.ReadFile("f", 10)
		got.Close()
		if err != nil || string(data) != "x" {
			t.Fatalf("%o: read %q: %v", mode, data, err)
		}
		if fi, _ := os.Stat(d); fi.Mode().Perm() != 0o700 {
			t.Fatalf("%o: left %v", mode, fi.Mode())
		}
	}
	os.Symlink(outside, filepath.Join(root, "link"))
	if _, err := r.OpenDirOwned("link"); err == nil {
		t.Fatal("OpenDirOwned followed a link")
	}
	untouched(t, outside)
}
