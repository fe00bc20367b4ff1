//go:build !unix

package fsafe

import (
	"errors"
	"io/fs"
	"os"
)

// Where there are no directory descriptors (Windows), hgate has no sandbox either, and
// fsafe refuses rather than act by name.
var errUnsupported = errors.ErrUnsupported

func OpenRoot(dir string) (*Root, error)                                 { return nil, errUnsupported }
func (r *Root) Close() error                                             { return nil }
func (r *Root) OpenDir(name string) (*Root, error)                       { return nil, errUnsupported }
func (r *Root) OpenDirOwned(name string) (*Root, error)                  { return nil, errUnsupported }
func (r *Root) Open(name string, max int64) (*os.File, error)            { return nil, errUnsupported }
func (r *Root) Create(name string, perm os.FileMode) (*os.File, error)   { return nil, errUnsupported }
func (r *Root) Append(name string) (*os.File, error)                     { return nil, errUnsupported }
func (r *Root) ReadDir(name string) ([]os.DirEntry, error)               { return nil, errUnsupported }
func (r *Root) Mkdir(name string, perm os.FileMode) error                { return errUnsupported }
func (r *Root) MkdirAll(name string, perm os.FileMode) error             { return errUnsupported }
func (r *Root) Remove(name string) error                                 { return errUnsupported }
func (r *Root) RemoveAll(name string) error                              { return errUnsupported }
func (r *Root) Rename(oldname, newname string) error                     { return errUnsupported }
func (r *Root) Chmod(name string, perm os.FileMode) error                { return errUnsupported }
func (r *Root) RenameTo(oldname string, dst *Root, newname string) error { return errUnsupported }
func TempFile(dir string) (*os.File, error)                              { return nil, errUnsupported }
func (r *Root) Readlink(name string) (string, error)                     { return "", errUnsupported }

// NoFollow is O_NOFOLLOW where there is one; Windows has none (and no sandbox).
const NoFollow = 0

func (r *Root) Lstat(name string) (fs.FileInfo, error) { return nil, errUnsupported }
func (r *Root) Symlink(target, name string) error      { return errUnsupported }
