package gitguard

import "github.com/hgate/hgate/gitguard/internal/index"

// fileStat is what the guard needs from lstat(2).
type fileStat struct {
	mode           uint32
	ctimeS, ctimeN int64
	mtimeS, mtimeN int64
	ino            uint64
	uid, gid       uint32
	size           int64
	noCache        bool // the platform gives no ctime/inode: always hash
}

const (
	sIFMT  = 0o170000
	sIFREG = 0o100000
	sIFLNK = 0o120000
	sIFDIR = 0o040000
)

func (s *fileStat) isReg() bool  { return s.mode&sIFMT == sIFREG }
func (s *fileStat) isLink() bool { return s.mode&sIFMT == sIFLNK }
func (s *fileStat) isDir() bool  { return s.mode&sIFMT == sIFDIR }

// matches reports whether the stat data equals the entry's cached copy (git
// keeps the low 32 bits of each field).
func (s *fileStat) matches(e *index.Entry) bool {
	return !s.noCache &&
		e.MtimeS == uint32(s.mtimeS) && e.MtimeN == uint32(s.mtimeN) &&
		e.CtimeS == uint32(s.ctimeS) && e.CtimeN == uint32(s.ctimeN) &&
		e.Ino == uint32(s.ino) && e.UID == s.uid && e.GID == s.gid &&
		e.Size == uint32(s.size)
}

type direntType uint8

const (
	dtUnknown direntType = iota
	dtDir
	dtReg
	dtLink
	dtOther
)

type dirent struct {
	name string
	typ  direntType
}
