package statefile

import (
	"io"
	"os"
	"path/filepath"

	"github.com/hgate/hgate/internal/fsafe"
)

// ErrNotRegular is returned for a path that is a fifo, socket, device or directory.
var ErrNotRegular = fsafe.ErrNotRegular

// openRegular opens a file the agent may have written through fsafe: its folder by path
// (hgate's), the name in it by descriptor, never following a link there, never blocking
// on a fifo, refusing anything but a regular file with one link.
func openRegular(path string) (*os.File, int64, error) {
	root, err := fsafe.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, 0, err
	}
	defer root.Close()
	f, err := root.Open(filepath.Base(path), -1)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// ReadTail returns the last n bytes of a regular file, or all of it when it is
// smaller, and whether bytes before them were left out. A file the agent may write
// can be a sparse file of many gigabytes: only what is used is read.
func ReadTail(path string, n int64) (data []byte, cut bool, err error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	off := max(size-n, 0)
	data, err = io.ReadAll(io.NewSectionReader(f, off, n))
	return data, off > 0, err
}

// ReadHead returns the first n bytes of a regular file, or all of it when it is
// smaller, and whether bytes after them were left out.
func ReadHead(path string, n int64) (data []byte, cut bool, err error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, n))
	return data, size > n, err
}
