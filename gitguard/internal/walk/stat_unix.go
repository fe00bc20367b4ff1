//go:build linux || darwin

package walk

import (
	"os"
	"syscall"
)

// Lstat returns the fields git keeps in the index, without following a
// final symlink.
func Lstat(path string) (Stat, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(path, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return Stat{}, err
		}
		break
	}
	return statT(&st), nil
}

// InfoStat is the stat data of an open file from its FileInfo (fstat).
func InfoStat(fi os.FileInfo) Stat {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return statT(st)
	}
	return Stat{NoCache: true}
}
