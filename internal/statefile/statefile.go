// Package statefile holds what every workspace state file shares: atomic
// writes that never follow a symlink, a strict JSON decoder whose errors name
// the file, line, column and field, and a JSON encoder that writes bytes the
// way Python's json.dump(indent=2) does, so auto-harness files stay
// byte-compatible. Files written by older hgate versions end in a newline;
// the decoder takes both, and the ledger compares a file with the bytes it
// recorded, so such files are not drift.
package statefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hgate/hgate/internal/proc"
)

// Mode is the permission given to every state file. The previous file's
// mode is deliberately not carried over: the file is ours, not the agent's.
const Mode fs.FileMode = 0o644

// WriteAtomic replaces path with data so that a reader sees either the old
// or the new content, never a mix: it writes a temporary file in the same
// directory, syncs it, renames it over path and syncs the directory.
//
// A destination that is a symlink is refused. rename(2) would replace the
// link rather than follow it, but an agent that swapped a state file for a
// link is tampering, and silently breaking the link would hide that.
func WriteAtomic(path string, data []byte) error {
	if fi, err := os.Lstat(path); err == nil {
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("refusing to write %s: it is a symlink (expected a regular file)", path)
		case !fi.Mode().IsRegular():
			return fmt.Errorf("refusing to write %s: it is not a regular file", path)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write %s: %w", path, err)
	}

	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-"+proc.Self().Tag()+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(Mode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	// The rename is durable only once the directory entry is on disk.
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}

// Load reads the state file at path and parses it; parse names path in its
// messages. A missing file is an error "read WHAT: ..." wrapping fs.ErrNotExist.
func Load[T any](path, what string, parse func(file string, data []byte) (T, error)) (T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("read %s: %w", what, err)
	}
	return parse(path, data)
}

// TimeLayout is how state files write a time: UTC, to the second, with an
// explicit +00:00 offset, as Python's datetime.isoformat(timespec="seconds")
// writes an aware UTC time.
const TimeLayout = "2006-01-02T15:04:05+00:00"

// Timestamp formats t in TimeLayout after converting it to UTC.
func Timestamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// IsTemp reports whether a file name is one WriteAtomic makes: ".NAME.tmp-PID-TICKS-DIGITS"
// (its maker's proc.Owner and a random number), or ".NAME.tmp-DIGITS" as hgate made them
// before they named their maker.
func IsTemp(name string) bool {
	_, ok := tempSuffix(name)
	return ok
}

// tempSuffix returns what follows ".tmp-" in a temporary file's name.
func tempSuffix(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, ".")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, ".tmp-")
	if i <= 0 {
		return "", false
	}
	suffix := rest[i+len(".tmp-"):]
	return suffix, suffix != "" && suffix[0] != '-' && strings.Trim(suffix, "0123456789-") == ""
}

// tempOwner returns the maker a temporary file's name gives; ok is false for a name
// that gives none (made before names carried it).
func tempOwner(name string) (proc.Owner, bool) {
	suffix, ok := tempSuffix(name)
	if !ok {
		return proc.Owner{}, false
	}
	o, _, ok := proc.ParseTag(suffix)
	return o, ok
}

// ReadDir is os.ReadDir with a missing dir read as empty: a workspace folder no
// command has made yet.
func ReadDir(dir string) ([]os.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return entries, err
}

// RemoveStale removes the temporary files in dir that isTemp names (IsTemp: those
// WriteAtomic makes) and nobody is writing — left by a process killed, or a disk that
// filled, between creating one and renaming it — and returns their paths. A file whose
// name gives its maker (WriteAtomic's) is removed only when that maker is provably gone
// (proc.Owner.Gone), whatever its age: a running `hgate report`'s is kept. Any other
// (go-git's, or WriteAtomic's of an older hgate) is removed when last modified before
// before: callers hold the lock every writer of such files holds, so none older than it
// is still being written. A missing dir has none.
func RemoveStale(dir string, isTemp func(name string) bool, before time.Time) ([]string, error) {
	entries, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTemp(e.Name()) || !stale(e, before) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// stale says whether RemoveStale may remove e.
func stale(e os.DirEntry, before time.Time) bool {
	if o, ok := tempOwner(e.Name()); ok {
		return o.Gone()
	}
	fi, err := e.Info()
	return err == nil && fi.ModTime().Before(before)
}
