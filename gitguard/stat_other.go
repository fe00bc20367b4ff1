//go:build !linux && !darwin

package gitguard

import (
	"io/fs"
	"os"
)

// lstat falls back to os.Lstat; without ctime and inode the stat data never
// matches the index, so every file is hashed: slower, never wrong.
func lstat(path string) (fileStat, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return fileStat{}, err
	}
	return infoStat(fi), nil
}

// infoStat is the stat data of an open file from its FileInfo (fstat).
func infoStat(fi os.FileInfo) fileStat {
	var mode uint32
	switch {
	case fi.Mode().IsRegular():
		mode = sIFREG | uint32(fi.Mode().Perm())
	case fi.Mode()&fs.ModeSymlink != 0:
		mode = sIFLNK
	case fi.IsDir():
		mode = sIFDIR
	}
	t := fi.ModTime()
	return fileStat{mode: mode, mtimeS: t.Unix(), mtimeN: int64(t.Nanosecond()), size: fi.Size(), noCache: true}
}
