// Package lockfile replaces a file inside the git directory the way git does:
// PATH.lock is created exclusively, takes the new content, and is renamed
// over PATH. A kill at any moment leaves PATH whole, old or new; the lock is
// removed only while it is still ours (never after the rename, when the name
// may already be another writer's lock).
package lockfile

import (
	"errors"
	"os"
	"path/filepath"
	"time"
)

// HeldError is returned by Create when another process holds the lock.
type HeldError struct{ Lock string }

func (e *HeldError) Error() string { return e.Lock + " exists" }

// File is a held PATH.lock.
type File struct {
	f    *os.File
	path string
	done bool
}

// Create takes PATH.lock. A lock older than staleAfter is taken to be left
// by a killed process and is removed first (0: any existing lock is).
// A *HeldError names the lock that another writer holds.
func Create(path string, staleAfter time.Duration) (*File, error) {
	lock := path + ".lock"
	f, err := create(lock)
	if errors.Is(err, os.ErrExist) {
		if fi, serr := os.Stat(lock); serr == nil && time.Since(fi.ModTime()) >= staleAfter {
			if rerr := os.Remove(lock); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				return nil, rerr
			}
			f, err = create(lock)
		}
	}
	if errors.Is(err, os.ErrExist) {
		return nil, &HeldError{Lock: filepath.Base(lock)}
	}
	if err != nil {
		return nil, err
	}
	return &File{f: f, path: path}, nil
}

func create(lock string) (*os.File, error) {
	return os.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
}

// Commit writes data to the lock, syncs it and renames it over PATH. On
// failure the lock is removed and PATH is untouched.
func (l *File) Commit(data []byte) error {
	_, err := l.f.Write(data)
	if err == nil {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(l.f.Name(), l.path)
	}
	if err == nil {
		l.done = true
		return nil
	}
	l.Abort()
	return err
}

// Abort removes the lock unless Commit renamed it; PATH is untouched. It is
// safe to call more than once and after Commit.
func (l *File) Abort() {
	if l.done {
		return
	}
	l.done = true
	l.f.Close()
	os.Remove(l.f.Name())
}
