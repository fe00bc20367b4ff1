//go:build !unix

package proc

import "os"

// fileID where there is no inode or change time (Windows, which has no sandbox): the
// size and modification time.
type fileID struct {
	size int64
	mod  int64
}

func identify(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	return fileID{size: fi.Size(), mod: fi.ModTime().UnixNano()}, nil
}
