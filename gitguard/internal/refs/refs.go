// Package refs is the one way hgate moves a ref: the branch HEAD names (or a
// detached HEAD), and its own refs under refs/hgate/. An update is a
// compare-and-set made the way git makes it, so that a kill at any moment
// leaves the ref at its old value or its new one, never empty or half
// written: NAME.lock is created exclusively, the ref is compared with the
// expected value while the lock is held, the new value goes into the lock,
// and the lock is renamed over the ref. A deleted ref leaves packed-refs the
// same way, through packed-refs.lock. Refs are read as git reads them: the
// loose file, else the line of packed-refs (loose.go). No reflog is written.
package refs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard/internal/lockfile"
	"github.com/hgate/hgate/internal/fault"
)

// ErrChanged is returned by Update when the ref did not hold the old value,
// or another writer held its lock: the caller can re-read and retry.
var ErrChanged = errors.New("ref changed concurrently")

// staleLock is the age after which a ref's lock is taken to be left by a
// killed process; git would refuse until someone removed it.
const staleLock = 10 * time.Second

// Store reads and moves the refs of one repository.
type Store struct {
	GitDir    string // this worktree's git directory: HEAD
	CommonDir string // refs/ and packed-refs
	// Stored, when set, maps the name a caller gives a ref to the name it is stored
	// under (a linked worktree keeps hgate's refs apart); messages keep the caller's.
	Stored func(name string) string
}

func (s *Store) stored(name string) string {
	if s.Stored == nil {
		return name
	}
	return s.Stored(name)
}

// A value is what a ref holds, as a loose ref file spells it without its
// newline: a hash, or "ref: NAME" for a symbolic ref. "" is no ref at all.

// HashValue is the value of a ref holding h; the zero hash is no ref.
func HashValue(h plumbing.Hash) string {
	if h.IsZero() {
		return ""
	}
	return h.String()
}

// Read returns the value of ref name, "" when it does not exist. A loose
// ref is read before packed-refs, as git does.
func (s *Store) Read(name string) (string, error) {
	v, found, err := readLoose(s.Path(name))
	if err != nil || found {
		return v, err
	}
	packed, err := s.packed()
	if err != nil {
		return "", err
	}
	return packed[s.stored(name)], nil
}

// Hash returns the hash ref name holds, zero when it does not exist; a
// symbolic ref is an error.
func (s *Store) Hash(name string) (plumbing.Hash, error) {
	v, err := s.Read(name)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("read ref %s: %w", name, err)
	}
	if target, ok := strings.CutPrefix(v, "ref: "); ok {
		return plumbing.ZeroHash, fmt.Errorf("read ref %s: symbolic ref to %s, expected a hash", name, target)
	}
	return plumbing.NewHash(v), nil
}

// Resolve follows symbolic refs from name (HEAD: the branch it names) to a
// hash; zero when the ref at the end does not exist (an unborn branch).
func (s *Store) Resolve(name string) (plumbing.Hash, error) {
	for range maxSymbolic {
		v, err := s.Read(name)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("read ref %s: %w", name, err)
		}
		target, ok := strings.CutPrefix(v, "ref: ")
		if !ok {
			return plumbing.NewHash(v), nil
		}
		name = target
	}
	return plumbing.ZeroHash, fmt.Errorf("read ref %s: more than %d symbolic refs in a row", name, maxSymbolic)
}

// maxSymbolic bounds a chain of symbolic refs, as git's does.
const maxSymbolic = 5

// Path is the file of loose ref name.
func (s *Store) Path(name string) string {
	if name == "HEAD" {
		return filepath.Join(s.GitDir, "HEAD")
	}
	return filepath.Join(s.CommonDir, filepath.FromSlash(s.stored(name)))
}

// Update sets ref name to new if it holds old now; new "" deletes it, old ""
// means it must not exist. name is HEAD or starts with refs/. A lost race
// returns an error wrapping ErrChanged.
func (s *Store) Update(name, new, old string) error {
	if name != "HEAD" && !strings.HasPrefix(name, "refs/") {
		return fmt.Errorf("set ref %s: name must start with refs/", name)
	}
	if err := checkValue(new); err != nil {
		return fmt.Errorf("set ref %s: %w", name, err)
	}
	path := s.Path(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("set ref %s: %w", name, err)
	}
	lock, err := lockfile.Create(path, staleLock)
	if held := (*lockfile.HeldError)(nil); errors.As(err, &held) {
		return fmt.Errorf("set ref %s: being written by another process (%w): %w", name, err, ErrChanged)
	}
	if err != nil {
		return fmt.Errorf("set ref %s: %w", name, err)
	}
	defer lock.Abort()
	fault.Point("ref-locked:" + name) // inside the move: NAME.lock held, the ref not yet written
	cur, err := s.Read(name)
	if err != nil {
		return fmt.Errorf("read ref %s: %w", name, err)
	}
	if cur != old {
		return fmt.Errorf("set ref %s: holds %s, expected %s: %w", name, Short(cur), Short(old), ErrChanged)
	}
	if new == old {
		return nil
	}
	if new == "" {
		// The packed-refs line, then the loose file, while the lock keeps writers out.
		if err := s.unpack(s.stored(name)); err != nil {
			return fmt.Errorf("delete ref %s: %w", name, err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete ref %s: %w", name, err)
		}
		return nil
	}
	if err := lock.Commit([]byte(new + "\n")); err != nil {
		return fmt.Errorf("set ref %s: %w", name, err)
	}
	return nil
}

// checkValue accepts what Update may write: nothing, a full hash, or a
// symbolic ref to a name under refs/.
func checkValue(v string) error {
	if v == "" || plumbing.IsHash(v) {
		return nil
	}
	if target, ok := strings.CutPrefix(v, "ref: "); ok && strings.HasPrefix(target, "refs/") && plumbing.ReferenceName(target).Validate() == nil {
		return nil
	}
	return fmt.Errorf("cannot write %q into a ref", v)
}

// Short names a value in messages: a hash by its first 12 digits.
func Short(v string) string {
	switch {
	case v == "":
		return "nothing"
	case plumbing.IsHash(v):
		return v[:12]
	}
	return v
}

// BreakLocks removes the lock files a killed hgate may have left on HEAD,
// the branch it names and the given refs. Only for a caller that knows the
// previous holder is dead (the loop resuming its own run).
func (s *Store) BreakLocks(names ...string) {
	if head, err := s.Read("HEAD"); err == nil {
		if target, ok := strings.CutPrefix(head, "ref: "); ok {
			names = append(names, target)
		}
	}
	os.Remove(s.Path("HEAD") + ".lock")
	for _, n := range names {
		if strings.HasPrefix(n, "refs/") {
			os.Remove(s.Path(n) + ".lock")
		}
	}
}
