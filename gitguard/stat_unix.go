//go:build linux || darwin

package gitguard

import (
	"os"
	"syscall"
)

// lstat returns the fields git keeps in the index, without following a
// final symlink.
func lstat(path string) (fileStat, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(path, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fileStat{}, err
		}
		break
	}
	return statT(&st), nil
}

// infoStat is the stat data of an open file from its FileInfo (fstat).
func infoStat(fi os.FileInfo) fileStat {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return statT(st)
	}
	return fileStat{noCache: true}
}
