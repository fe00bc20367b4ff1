//go:build darwin

package walk

import "syscall"

// statT takes the fields git keeps in the index from this system's stat struct.
func statT(st *syscall.Stat_t) Stat {
	return Stat{
		Mode:   uint32(st.Mode),
		CtimeS: st.Ctimespec.Sec, CtimeN: st.Ctimespec.Nsec,
		MtimeS: st.Mtimespec.Sec, MtimeN: st.Mtimespec.Nsec,
		Ino: st.Ino, UID: st.Uid, GID: st.Gid, Size: st.Size,
	}
}
