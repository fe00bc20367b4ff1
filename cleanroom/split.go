package cleanroom

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/benchmark"
)

// Split is the side of the train/test split a run request serves. It decides what its
// tasks may read (clean_room.test_only, loop.sandbox.hidden) and where their writes to
// the caches go; a request never mixes the two (the gate's callers split one that would).
type Split int

const (
	// Train is every run but the held-out split's: train tasks, hgate bench, Steps 1
	// and 3, qualification. It never sees test-only or hidden data.
	Train Split = iota
	// Test is the held-out split: it may read clean_room.test_only, and its writes
	// to the caches go to a private layer discarded when the task ends.
	Test
)

// String is the split's name as {split} spells it.
func (s Split) String() string {
	if s == Test {
		return "test"
	}
	return "train"
}

// scoped is what only test-split runs may read, resolved against the repository root.
type scoped struct {
	// room are paths of the tree (slash-separated, relative): absent from train rooms.
	room []string
	// testRead are the test_only paths as absolute paths: test tasks may read them.
	testRead []string
	// trainHidden are the paths a train task may not read even where its allowlist
	// (clean_room.read) covers them: test_only and loop.sandbox.hidden.
	trainHidden []string
}

// scope resolves clean_room.test_only and loop.sandbox.hidden. A relative path names both
// a path of the room and the repository's own copy of it; an absolute one inside the
// repository names the same two.
func (rs *Rooms) scope() (scoped, error) {
	var sc scoped
	root := rs.Repo.Root()
	add := func(p string, test bool) error {
		abs, err := Expand(p, root)
		if err != nil {
			return err
		}
		sc.trainHidden = append(sc.trainHidden, abs)
		if test {
			sc.testRead = append(sc.testRead, abs)
		}
		if rel, err := filepath.Rel(root, abs); err == nil && rel != "." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != ".." {
			sc.room = append(sc.room, filepath.ToSlash(rel))
		}
		return nil
	}
	for _, p := range rs.Config.CleanRoom.TestOnly {
		if err := add(p, true); err != nil {
			return sc, fmt.Errorf("clean room: test_only %s: %w", p, err)
		}
	}
	for _, p := range rs.Config.Loop.Sandbox.Hidden {
		if err := add(p, false); err != nil {
			return sc, fmt.Errorf("clean room: loop.sandbox.hidden %s: %w", p, err)
		}
	}
	return sc, nil
}

// removeScoped takes the room paths only test runs may see out of a train room's tree,
// carried read-only folders included. A symlink on the way (the tree may hold one) is
// removed itself: nothing outside the room is ever touched through it.
func removeScoped(dir string, room []string) error {
	for _, rel := range room {
		p, ok := inRoom(dir, filepath.FromSlash(rel))
		if !ok {
			continue // not in this tree
		}
		parent := filepath.Dir(p)
		fi, err := os.Stat(parent)
		if err != nil {
			return err
		}
		if err := os.Chmod(parent, fi.Mode().Perm()|0o700); err != nil {
			return err
		}
		benchmark.RemoveAll(p)
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("clean room: cannot take %s out of the train room", rel)
		}
		if err := os.Chmod(parent, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// inRoom returns the first of dir's entries along rel that is a symlink, or rel itself,
// and whether it exists.
func inRoom(dir, rel string) (string, bool) {
	p := dir
	for _, c := range strings.Split(rel, string(filepath.Separator)) {
		p = filepath.Join(p, c)
		fi, err := os.Lstat(p)
		if err != nil {
			return "", false
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return p, true
		}
	}
	return p, true
}

// TestScoped reports whether a test lane reads more than a train lane: a clean room
// with clean_room.test_only or loop.sandbox.hidden set.
func (rs *Rooms) TestScoped() bool {
	return rs.Enabled && len(rs.Config.CleanRoom.TestOnly)+len(rs.Config.Loop.Sandbox.Hidden) > 0
}

// warnTracked warns once when a clean_room.test_only path of the room is in the tree
// just materialized into dir (before the carried paths): git's objects hold it, and the
// loop's agent may read .git.
func (rs *Rooms) warnTracked(dir string) {
	if rs.trackedWarned {
		return
	}
	for _, p := range rs.Config.CleanRoom.TestOnly {
		abs, err := Expand(p, rs.Repo.Root())
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(rs.Repo.Root(), abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, rel)); err == nil {
			rs.trackedWarned = true
			fmt.Fprintf(rs.log(), "hgate: warning: clean_room.test_only: %s is tracked by git: train runs never see it, but the loop's agent can read it from .git's objects (git show); keep test-only files untracked and carry them (clean_room.carry)\n", p)
			return
		}
	}
}
