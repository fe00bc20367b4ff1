//go:build unix

package proc

import "golang.org/x/sys/unix"

type fileID struct {
	dev, ino            uint64
	size                int64
	ctimeSec, ctimeNsec int64
}

// identify stats path, following links (the program that would run).
func identify(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), size: st.Size,
		ctimeSec: int64(st.Ctim.Sec), ctimeNsec: int64(st.Ctim.Nsec)}, nil
}
