package cleanroom

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/sandbox"
)

// TestSplitLanes: a train lane's tree lacks the room paths of clean_room.test_only and
// loop.sandbox.hidden (a carried one included) and its policy hides their folders even
// where clean_room.read covers them; a test lane's tree has them, its allowlist names the
// test_only folders, and its caches are layered. Where the sandbox is off, a test lane
// gets empty caches of its own.
func TestSplitLanes(t *testing.T) {
	e, tree := roomEnv(t)
	root := e.Repo.Root()
	outside := t.TempDir()
	e.Config.CleanRoom.TestOnly = []string{"bench/lib.sh", outside}
	e.Config.CleanRoom.Read = []string{filepath.Dir(outside)}
	e.Config.Loop.Sandbox.Hidden = []string{"data/hidden"}
	e.Config.CleanRoom.Carry = []string{"data"}
	e.Config.CleanRoom.Caches = map[string]string{"MY_CACHE": "mine"}
	if err := os.MkdirAll(filepath.Join(root, "data", "hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "data", "hidden", "q"), []byte("q\n"), 0o644)
	os.WriteFile(filepath.Join(root, "data", "keep"), []byte("k\n"), 0o644)
	rm, err := e.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	train, err := rm.Runner(nil, Train)
	if err != nil {
		t.Fatal(err)
	}
	test, err := rm.Runner(nil, Test)
	if err != nil {
		t.Fatal(err)
	}
	has := func(dir, rel string) bool {
		_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
		return err == nil
	}
	for _, rel := range []string{"bench/lib.sh", "data/hidden"} {
		if has(train.Dir, rel) {
			t.Errorf("the train tree holds %s", rel)
		}
		if !has(test.Dir, rel) {
			t.Errorf("the test tree lacks %s", rel)
		}
	}
	if !has(train.Dir, "data/keep") || !has(train.Dir, "agent.sh") {
		t.Error("the train tree lost more than the scoped paths")
	}
	if train.Dir == test.Dir {
		t.Error("train and test lanes share one tree")
	}
	if !e.Sandboxed() {
		// Without Landlock: the test lane's caches are its own, empty folders.
		if v := envValue(test.Env, "MY_CACHE"); v == envValue(train.Env, "MY_CACHE") {
			t.Errorf("unsandboxed test lane shares the cache %s", v)
		}
		return
	}
	tp, sp := train.Sandbox, test.Sandbox
	for _, h := range []string{outside, filepath.Join(root, "bench/lib.sh"), filepath.Join(root, "data/hidden")} {
		if !slices.Contains(tp.Hidden, h) {
			t.Errorf("train policy does not hide %s: %v", h, tp.Hidden)
		}
		if slices.Contains(sp.Hidden, h) {
			t.Errorf("test policy hides %s", h)
		}
	}
	if !slices.Contains(sp.Read, outside) || slices.Contains(tp.Read, outside) {
		t.Errorf("test_only folder: test read %v, train read %v", sp.Read, tp.Read)
	}
	cache := envValue(test.Env, "MY_CACHE")
	if sandbox.Namespaces() == nil {
		if !slices.Equal(sp.Layered, []string{cache}) || len(tp.Layered) != 0 {
			t.Errorf("layered: test %v, train %v", sp.Layered, tp.Layered)
		}
	} else if slices.Contains(sp.Write, cache) || !slices.Contains(sp.Read, cache) {
		t.Errorf("no namespaces: the test lane's cache must be read-only: write %v", sp.Write)
	}
	if !slices.Contains(tp.Write, cache) {
		t.Errorf("train lane cannot write its cache: %v", tp.Write)
	}
}

// TestLayersWarning: where no overlay can be had, the first test lane with caches warns
// once that they are read-only to test tasks; a train lane never asks.
func TestLayersWarning(t *testing.T) {
	saved := sandboxLayers
	defer func() { sandboxLayers = saved }()
	sandboxLayers = func() error { return errors.New("no overlay: mount: permission denied") }
	e, tree := roomEnv(t)
	e.Config.CleanRoom.Caches = map[string]string{"MY_CACHE": "mine"}
	var log strings.Builder
	e.Log = &log
	rm, err := e.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	for _, s := range []Split{Train, Test, Test} {
		if _, err := rm.Runner(nil, s); err != nil {
			t.Fatal(err)
		}
	}
	want := ""
	if e.Sandboxed() {
		want = "hgate: warning: clean_room.caches are read-only to test-split tasks here: their writes cannot go to a private layer (no overlay: mount: permission denied)\n"
		if !e.nsOK {
			want = strings.Replace(want, "no overlay: mount: permission denied", "no mount namespace", 1)
		}
	}
	if got := log.String(); !strings.HasSuffix(got, want) || strings.Count(got, "read-only to test-split") != strings.Count(want, "read-only to test-split") {
		t.Errorf("log %q, want it to end with %q", got, want)
	}
}

// TestRemoveScopedSymlink: a symlink of the tree on the way to a scoped path is removed
// itself; what it points to, outside the room, is left alone.
func TestRemoveScopedSymlink(t *testing.T) {
	room, outside := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(outside, "test"), 0o755)
	os.WriteFile(filepath.Join(outside, "test", "keep"), []byte("k\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(room, "data")); err != nil {
		t.Fatal(err)
	}
	if err := removeScoped(room, []string{"data/test", "absent/x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(room, "data")); err == nil {
		t.Error("the symlink on the way is still in the room")
	}
	if _, err := os.Stat(filepath.Join(outside, "test", "keep")); err != nil {
		t.Errorf("a file outside the room was removed: %v", err)
	}
}

// TestWarnTracked: a test_only path git tracks is named once, with the way on.
func TestWarnTracked(t *testing.T) {
	e, tree := roomEnv(t)
	e.Config.CleanRoom.TestOnly = []string{"bench/lib.sh", "/elsewhere"}
	var log strings.Builder
	e.Log = &log
	for range 2 {
		rm, err := e.Open(tree)
		if err != nil {
			t.Fatal(err)
		}
		rm.Close()
	}
	want := "hgate: warning: clean_room.test_only: bench/lib.sh is tracked by git: train runs never see it, but the loop's agent can read it from .git's objects (git show); keep test-only files untracked and carry them (clean_room.carry)\n"
	if log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
}
