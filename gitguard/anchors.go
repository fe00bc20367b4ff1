package gitguard

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// UpdateRef points name at new if it still points at old (a zero old: absent), like
// SetRef, but a process killed during the update leaves the old value or the new one,
// never an empty ref. go-git's update truncates the loose ref file and then writes it: a
// SIGKILL in between (a crash test, kill -9, a loop killed mid-record) loses the ref —
// for refs/hgate/ledger, the whole state's history. Here the new value overwrites the old
// in one write of the same length, truncating only afterwards, under go-git's own lock
// on the ref file, so go-git writers and this one still exclude each other. Deleting (a
// zero new) is SetRef's job.
func (r *Repo) UpdateRef(name string, new, old plumbing.Hash) (err error) {
	if new.IsZero() {
		return r.SetRef(name, new, old)
	}
	if !strings.HasPrefix(name, "refs/") || plumbing.ReferenceName(name).Validate() != nil {
		return fmt.Errorf("update ref %s: not a valid ref name under refs/", name)
	}
	st, ok := r.repo.Storer.(interface{ Filesystem() billy.Filesystem })
	if !ok {
		return fmt.Errorf("update ref %s: the repository is not stored in files", name)
	}
	f, err := st.Filesystem().OpenFile(name, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	defer func() {
		// Closing releases the lock; a failed close may have lost the write.
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("update ref %s: %w", name, cerr)
		}
	}()
	if err := f.Lock(); err != nil {
		return fmt.Errorf("update ref %s: lock: %w", name, err)
	}
	cur, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	var at plumbing.Hash
	switch line := strings.TrimSpace(string(cur)); {
	case line == "":
		// An empty loose file reads as absent, so the ref may be packed.
		if at, err = r.Ref(name); err != nil {
			return err
		}
	case plumbing.IsHash(line):
		at = plumbing.NewHash(line)
	default:
		return fmt.Errorf("update ref %s: holds %q, expected a hash", name, line)
	}
	if at != old {
		return fmt.Errorf("update ref %s: holds %s, expected %s: %w", name, short(at), short(old), ErrRefChanged)
	}
	content := []byte(new.String() + "\n")
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	if _, err := f.Write(content); err != nil {
		return fmt.Errorf("update ref %s: %w", name, err)
	}
	if len(cur) > len(content) {
		if err := f.Truncate(int64(len(content))); err != nil {
			return fmt.Errorf("update ref %s: %w", name, err)
		}
	}
	return nil
}
