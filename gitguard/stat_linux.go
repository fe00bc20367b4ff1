//go:build linux

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

func statT(st *syscall.Stat_t) fileStat {
	return fileStat{
		mode:   st.Mode,
		ctimeS: int64(st.Ctim.Sec), ctimeN: int64(st.Ctim.Nsec), // int32 on 32-bit platforms
		mtimeS: int64(st.Mtim.Sec), mtimeN: int64(st.Mtim.Nsec),
		ino: uint64(st.Ino), uid: st.Uid, gid: st.Gid, size: int64(st.Size),
	}
}
