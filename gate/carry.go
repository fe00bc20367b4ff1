package gate

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/digest"
	"github.com/hgate/hgate/ledger"
)

// carry is the check of clean_room.carry, the files copied into every room beside the
// tree: their manifest as the ledger accepted it against the copies a room holds.
type carry struct{ *Env }

// check compares the carried paths the benchmark is about to see — under dir, the
// clean room holding the copies hgate made (or the repository without one) — with the
// manifest the ledger accepted. Hashing the copies, not the originals, checks the bytes
// the tasks will read. A change is an error naming each file. When the ledger holds no
// manifest yet (a first prepare, or a ledger from before manifests) it returns one built
// from the originals, after checking the copies against it, for the caller to record;
// with nothing carried there is nothing to record.
func (c carry) check(dir string) (fresh *ledger.Manifest, err error) {
	paths := c.Config.CleanRoom.Carry
	accepted, err := c.ledger().Carry()
	if err != nil {
		return nil, err
	}
	outside, err := outsidePaths(c.Config.CleanRoom, c.Repo.Root())
	if err != nil || accepted == nil && len(paths) == 0 && len(outside) == 0 {
		return nil, err
	}
	key, err := digestKey(c.Env)
	if err != nil {
		return nil, err
	}
	if key == nil && accepted != nil && accepted.Keyed() {
		return nil, digest.LostKey(c.Repo.CommonDir())
	}
	now, err := ledger.BuildManifest(dir, paths, key)
	if err != nil {
		return nil, err
	}
	if accepted == nil {
		// The manifest to accept is the originals' (their modes as they are); the copies
		// must match it.
		if accepted, err = ledger.BuildManifest(c.Repo.Root(), paths, key); err != nil {
			return nil, err
		}
		fresh = accepted
	}
	if diffs := accepted.Differences(now); len(diffs) > 0 {
		return nil, &CarryChanged{Diffs: diffs}
	}
	return checkOutside(accepted, fresh, outside, key)
}

// CarryChanged is the refusal of a command whose carried files are not as the ledger
// accepted them. It carries its own fix, so a caller that adds advice uses it instead.
type CarryChanged struct {
	Diffs []string // one line a changed file
}

func (e *CarryChanged) Error() string {
	if len(e.Diffs) == 1 {
		return e.Diffs[0] + "; run `hgate state rebase` to accept it"
	}
	return strings.Join(e.Diffs, "\n") + "\nrun `hgate state rebase` to accept the carried files as they are now"
}

// Problems, About and Fix let a refusal name each change with the one fix once.
func (e *CarryChanged) Problems() []string { return e.Diffs }
func (e *CarryChanged) About() string      { return "clean_room.carry" }
func (e *CarryChanged) Fix() string {
	return "hgate state rebase, to accept the carried files as they are now"
}

// checkOutside compares the data outside the repository (outsidePaths, ledger/outside.go)
// with what the ledger recorded of it in accepted, the carry manifest. A change is an
// error naming each path; the way on is a new baseline, since the baseline was measured
// on that data. It returns the manifest for the caller to record: fresh, or accepted
// with the data added when the ledger had no record of it (a first prepare, or a ledger
// from before this record).
func checkOutside(accepted, fresh *ledger.Manifest, paths []string, key *digest.Key) (*ledger.Manifest, error) {
	if accepted.Outside == nil && len(paths) == 0 {
		return fresh, nil
	}
	now, err := ledger.BuildOutside(paths, key)
	if err != nil {
		return nil, fmt.Errorf("clean_room.read/test_only: %w", err)
	}
	if accepted.Outside == nil {
		m := *accepted
		m.Outside = now
		return &m, nil
	}
	diffs := accepted.Outside.Differences(now)
	if len(diffs) == 0 {
		return fresh, nil
	}
	return nil, fmt.Errorf("clean_room.read/test_only: the benchmark's data outside the repository changed since prepare recorded it:\n  %s\nthe baseline was measured on it as it was: run `hgate prepare --reset` to take a new baseline on it as it is now", strings.Join(diffs, "\n  "))
}

// outsidePaths are clean_room.read and clean_room.test_only (cr, for the repository at
// root) as absolute paths, but for those the carry manifest covers (in a carried path)
// and those that hold the repository itself (a home folder: its files change with every
// command).
func outsidePaths(cr config.CleanRoom, root string) ([]string, error) {
	var carried []string
	for _, c := range cr.Carry {
		carried = append(carried, filepath.Join(root, filepath.FromSlash(strings.TrimRight(c, "/"))))
	}
	var out []string
	for _, p := range slices.Concat(cr.Read, cr.TestOnly) {
		abs, err := cleanroom.Expand(p, root)
		if err != nil {
			return nil, fmt.Errorf("clean_room: %s: %w", p, err)
		}
		// Inside the repository: a tracked file is the tree's, which Step 0 guards; an
		// untracked or ignored one is no sandbox's to write in the loop, and in manual mode
		// as open as the worktree (docs/security/integrity.md). A path holding the
		// repository would hash it whole.
		if within(abs, root) || within(root, abs) || slices.ContainsFunc(carried, func(c string) bool { return within(abs, c) }) {
			continue
		}
		out = append(out, abs)
	}
	return out, nil
}

// within reports whether p is dir or inside it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// adopt records a manifest check built for a ledger that had none, in a commit
// of its own, before the benchmark runs.
func (c carry) adopt(m *ledger.Manifest) error {
	if m == nil {
		return nil
	}
	fmt.Fprintf(c.log(), "hgate: clean_room.carry: recorded the hashes of %d carried file(s) in the ledger; a later change to them stops hgate until `hgate state rebase` accepts it\n", len(m.Files))
	if m.Outside != nil {
		fmt.Fprintf(c.log(), "hgate: clean_room.read/test_only: recorded %d file(s) outside the repository in the ledger; a later change to them stops hgate until `hgate prepare --reset`\n", len(m.Outside.Files))
	}
	return store(c).commit(ledger.Update{Message: fmt.Sprintf("carry: accepted %d file(s) of clean_room.carry as they are", len(m.Files)), Carry: m})
}

// verify is check for a command that runs the benchmark after prepare: a manifest
// the ledger lacked is recorded at once.
func (c carry) verify(dir string) error {
	fresh, err := c.check(dir)
	if err != nil {
		return err
	}
	return c.adopt(fresh)
}

// openVerifiedRoom opens a room for a command that runs the benchmark after prepare: the
// carried paths in the room must be those the ledger accepted (carry.verify).
func (c carry) openVerifiedRoom(tree plumbing.Hash) (*cleanroom.Room, error) {
	rm, err := c.rooms().Open(tree)
	if err != nil {
		return nil, err
	}
	// The test split's tree holds every carried path; the train one lacks the test-only ones.
	dir, err := rm.TestDir()
	if err == nil {
		err = c.verify(dir)
	}
	if err != nil {
		rm.Close()
		return nil, err
	}
	return rm, nil
}
