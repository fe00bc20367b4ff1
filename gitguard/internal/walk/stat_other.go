//go:build !linux && !darwin

package walk

import (
	"io/fs"
	"os"
)

// Lstat falls back to os.Lstat; without ctime and inode the stat data never
// matches the index, so every file is hashed: slower, never wrong.
func Lstat(path string) (Stat, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Stat{}, err
	}
	return InfoStat(fi), nil
}

// InfoStat is the stat data of an open file from its FileInfo (fstat).
func InfoStat(fi os.FileInfo) Stat {
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
	return Stat{Mode: mode, MtimeS: t.Unix(), MtimeN: int64(t.Nanosecond()), Size: fi.Size(), NoCache: true}
}
