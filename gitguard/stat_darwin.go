//go:build darwin

package gitguard

import "syscall"

// statT takes the fields git keeps in the index from this system's stat struct.
func statT(st *syscall.Stat_t) fileStat {
	return fileStat{
		mode:   uint32(st.Mode),
		ctimeS: st.Ctimespec.Sec, ctimeN: st.Ctimespec.Nsec,
		mtimeS: st.Mtimespec.Sec, mtimeN: st.Mtimespec.Nsec,
		ino: st.Ino, uid: st.Uid, gid: st.Gid, size: st.Size,
	}
}
