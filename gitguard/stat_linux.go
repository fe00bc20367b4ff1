//go:build linux

package gitguard

import "syscall"

// statT takes the fields git keeps in the index from this system's stat struct.
func statT(st *syscall.Stat_t) fileStat {
	return fileStat{
		mode:   st.Mode,
		ctimeS: int64(st.Ctim.Sec), ctimeN: int64(st.Ctim.Nsec), // int32 on 32-bit platforms
		mtimeS: int64(st.Mtim.Sec), mtimeN: int64(st.Mtim.Nsec),
		ino: uint64(st.Ino), uid: st.Uid, gid: st.Gid, size: int64(st.Size),
	}
}
