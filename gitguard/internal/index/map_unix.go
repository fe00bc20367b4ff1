//go:build unix

package index

import (
	"os"
	"syscall"
)

// mapFile maps the file at path read-only and private; an empty file is an empty slice.
func mapFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() == 0 {
		return nil, nil // nothing to map: the parse finds it too short
	}
	if int64(int(fi.Size())) != fi.Size() {
		return nil, &os.PathError{Op: "mmap", Path: path, Err: syscall.EFBIG}
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: path, Err: err}
	}
	return data, nil
}
