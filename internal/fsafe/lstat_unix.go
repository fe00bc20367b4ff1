//go:build unix && !linux

package fsafe

import (
	"io/fs"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// Lstat describes name itself (a link as a link): fstatat of its last component in its
// parent folder, opened as every name is. Without O_PATH the result carries no kernel
// stat data of the syscall package's type (Sys is a *unix.Stat_t).
func (r *Root) Lstat(name string) (fs.FileInfo, error) {
	record("lstat", r.path, name)
	dfd, base, err := r.parent(name)
	if err != nil {
		return nil, err
	}
	defer closeParent(r, dfd)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: r.Join(name), Err: err}
	}
	return &statInfo{name: path.Base(name), st: st}, nil
}

type statInfo struct {
	name string
	st   unix.Stat_t
}

func (s *statInfo) Name() string { return s.name }
func (s *statInfo) Size() int64  { return s.st.Size }
func (s *statInfo) IsDir() bool  { return s.st.Mode&unix.S_IFMT == unix.S_IFDIR }
func (s *statInfo) Sys() any     { return &s.st }
func (s *statInfo) ModTime() time.Time {
	return time.Unix(int64(s.st.Mtim.Sec), int64(s.st.Mtim.Nsec))
}
func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	switch s.st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFREG:
	default:
		m |= fs.ModeIrregular
	}
	return m
}

func nonblock(int) int { return unix.O_NONBLOCK }
