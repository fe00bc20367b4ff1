package gate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/internal/digest"
	"github.com/hgate/hgate/ledger"
)

// checkCarry compares the carried paths the benchmark is about to see — under dir, the
// clean room holding the copies hgate made (or the repository without one) — with the
// manifest the ledger accepted. Hashing the copies, not the originals, checks the bytes
// the tasks will read. A change is an error naming each file. When the ledger holds no
// manifest yet (a first prepare, or a ledger from before manifests) it returns one built
// from the originals, after checking the copies against it, for the caller to record;
// with nothing carried there is nothing to record.
func (e *Env) checkCarry(dir string) (fresh *ledger.Manifest, err error) {
	paths := e.Config.CleanRoom.Carry
	accepted, err := e.ledger().Carry()
	if err != nil {
		return nil, err
	}
	if accepted == nil && len(paths) == 0 {
		return nil, nil
	}
	key, err := e.digestKey()
	if err != nil {
		return nil, err
	}
	if key == nil && accepted != nil && accepted.Keyed() {
		return nil, digest.LostKey(e.Repo.CommonDir())
	}
	now, err := ledger.BuildManifest(dir, paths, key)
	if err != nil {
		return nil, err
	}
	if accepted == nil {
		// The manifest to accept is the originals' (their modes as they are); the copies
		// must match it.
		if accepted, err = ledger.BuildManifest(e.Repo.Root(), paths, key); err != nil {
			return nil, err
		}
		fresh = accepted
	}
	diffs := accepted.Differences(now)
	switch len(diffs) {
	case 0:
		return fresh, nil
	case 1:
		return nil, errors.New(diffs[0] + "; run `hgate state rebase` to accept it")
	}
	return nil, errors.New(strings.Join(diffs, "\n") + "\nrun `hgate state rebase` to accept the carried files as they are now")
}

// adoptCarry records a manifest checkCarry built for a ledger that had none, in a commit
// of its own, before the benchmark runs.
func (e *Env) adoptCarry(m *ledger.Manifest) error {
	if m == nil {
		return nil
	}
	fmt.Fprintf(e.log(), "hgate: clean_room.carry: recorded the hashes of %d carried file(s) in the ledger; a later change to them stops hgate until `hgate state rebase` accepts it\n", len(m.Files))
	return e.commit(ledger.Update{Message: fmt.Sprintf("carry: accepted %d file(s) of clean_room.carry as they are", len(m.Files)), Carry: m})
}

// verifyCarry is checkCarry for a command that runs the benchmark after prepare: a manifest
// the ledger lacked is recorded at once.
func (e *Env) verifyCarry(dir string) error {
	fresh, err := e.checkCarry(dir)
	if err != nil {
		return err
	}
	return e.adoptCarry(fresh)
}

// openVerifiedRoom opens a room for a command that runs the benchmark after prepare: the
// carried paths in the room must be those the ledger accepted (verifyCarry).
func (e *Env) openVerifiedRoom(tree plumbing.Hash) (*cleanroom.Room, error) {
	rm, err := e.rooms().Open(tree)
	if err != nil {
		return nil, err
	}
	// The test split's tree holds every carried path; the train one lacks the test-only ones.
	dir, err := rm.TestDir()
	if err == nil {
		err = e.verifyCarry(dir)
	}
	if err != nil {
		rm.Close()
		return nil, err
	}
	return rm, nil
}
