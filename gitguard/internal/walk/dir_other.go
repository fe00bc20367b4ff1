//go:build !linux && !darwin && !freebsd

package walk

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
)

type dirHandle struct{ path string }

func openDir(path string) (*dirHandle, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.ENOTDIR}
	}
	return &dirHandle{path: path}, nil
}

func (d *dirHandle) close() {}

// openDirAt opens the directory name inside parent: by path on these systems.
func openDirAt(parent *dirHandle, name string) (*dirHandle, error) {
	return openDir(strings.TrimSuffix(parent.path, "/") + "/" + name)
}

// entries appends the directory's entries to out.
func (d *dirHandle) entries(_ *[]byte, out []dirent) ([]dirent, error) {
	f, err := os.Open(d.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	return appendDirents(out, ents), nil
}

func (d *dirHandle) stat(name string) (Stat, error) {
	return Lstat(d.path + "/" + name)
}

// hashFile hashes the regular file name inside the directory as a blob.
func (d *dirHandle) hashFile(name string, _ int64) (plumbing.Hash, error) {
	f, err := os.Open(d.path + "/" + name)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := plumbing.NewHasher(plumbing.BlobObject, fi.Size())
	if n, err := io.Copy(h, f); err != nil || n != fi.Size() {
		return plumbing.ZeroHash, fmt.Errorf("%s changed while it was read (%v)", name, err)
	}
	return h.Sum(), nil
}

// openFile is never open here: see openStat.
type openFile struct{ ok bool }

func (openFile) close() {}

func (openFile) hash(int64) (plumbing.Hash, error) { return plumbing.ZeroHash, errors.ErrUnsupported }

// openStat is not done on these systems: without a descriptor-relative open that
// refuses links, the walk states a name before it opens it (lookup falls back).
func (d *dirHandle) openStat(string) (Stat, openFile, error) {
	return Stat{}, openFile{}, errors.ErrUnsupported
}

// readlink is the target of the symlink name inside the directory.
func (d *dirHandle) readlink(name string) (string, error) {
	return os.Readlink(d.path + "/" + name)
}
