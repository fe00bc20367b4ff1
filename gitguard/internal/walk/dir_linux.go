//go:build linux

package walk

import (
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// On Linux the walk reads raw directory entries and stats files relative to
// the open directory: no per-entry allocation and no path walk per lstat,
// which is most of what keeps the guard ahead of git status.

type dirHandle struct{ fd int }

func openDir(path string) (*dirHandle, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &dirHandle{fd: fd}, nil
	}
}

func (d *dirHandle) close() { unix.Close(d.fd) }

// entries appends the directory's entries, without "." and "..", to out. The names
// point into *buf, the caller's scratch space, without a copy: they stay valid until
// the next call with the same buf, so a caller keeps none of them past its use of
// the listing. A listing larger than *buf goes on in a new buffer twice as large
// (left in *buf), and the names already read keep the old one.
func (d *dirHandle) entries(buf *[]byte, out []dirent) ([]dirent, error) {
	b := *buf
	if len(b) < minDirBuf {
		b = make([]byte, 32<<10)
		*buf = b
	}
	used := 0
	for {
		if len(b)-used < minDirBuf {
			b, used = make([]byte, 2*len(b)), 0
			*buf = b
		}
		n, err := unix.ReadDirent(d.fd, b[used:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		out = appendRecords(out, b[used:used+n])
		used += n
	}
}

// minDirBuf is the least room a getdents64 call is given: several records of the
// longest name (NAME_MAX 255 bytes, 19 of header).
const minDirBuf = 4 << 10

// appendRecords appends the entries of the linux_dirent64 records in b to out, each
// name a string over b's bytes (b is not changed while the names are in use).
func appendRecords(out []dirent, b []byte) []dirent {
	off := 0
	for len(b)-off >= 19 {
		reclen := int(*(*uint16)(unsafe.Pointer(&b[off+16])))
		if reclen < 19 || reclen > len(b)-off {
			break
		}
		typ := b[off+18]
		start, end := off+19, off+reclen
		for i := start; i < end; i++ {
			if b[i] == 0 {
				end = i
				break
			}
		}
		off += reclen
		if end == start || (b[start] == '.' && (end == start+1 || end == start+2 && b[start+1] == '.')) {
			continue
		}
		out = append(out, dirent{name: unsafe.String(&b[start], end-start), typ: direntTypeOf(typ)})
	}
	return out
}

// direntTypeOf is the walk's type for a linux_dirent64 d_type.
func direntTypeOf(typ byte) direntType {
	switch typ {
	case unix.DT_DIR:
		return dtDir
	case unix.DT_REG:
		return dtReg
	case unix.DT_LNK:
		return dtLink
	case unix.DT_UNKNOWN:
		return dtUnknown
	}
	return dtOther
}

// stat is lstat of a name inside the directory.
func (d *dirHandle) stat(name string) (Stat, error) {
	var st unix.Stat_t
	for {
		err := fstatat(d.fd, name, &st)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Stat{}, err
		}
		break
	}
	return unixStat(&st), nil
}

// unixStat takes the fields git keeps in the index from a stat struct.
func unixStat(st *unix.Stat_t) Stat {
	return Stat{
		Mode:   st.Mode,
		CtimeS: int64(st.Ctim.Sec), CtimeN: int64(st.Ctim.Nsec), // int32 on 32-bit platforms
		MtimeS: int64(st.Mtim.Sec), MtimeN: int64(st.Mtim.Nsec),
		Ino: uint64(st.Ino), UID: st.Uid, GID: st.Gid, Size: int64(st.Size), Nlink: uint64(st.Nlink),
	}
}

const openFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

// hashFile hashes the regular file name inside the directory as a blob of
// size bytes (its lstat size). It opens without following a symlink and
// never blocks on a fifo planted in the file's place; content of another
// size is an error.
func (d *dirHandle) hashFile(name string, size int64) (plumbing.Hash, error) {
	fd, err := openat(d.fd, name)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer closeFd(fd)
	return hashFd(fd, name, size)
}

// openStat opens the file name inside the directory for reading (without following
// a symlink or blocking on a fifo) and returns its stat data from the descriptor:
// one path lookup for a file the walk is going to hash, where stat then open took two.
// The stat data is the opened file's, so what is judged is what is read.
func (d *dirHandle) openStat(name string) (Stat, openFile, error) {
	fd, err := openat(d.fd, name)
	if err != nil {
		return Stat{}, openFile{}, err
	}
	var st unix.Stat_t
	for {
		err = fstatFd(fd, &st)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		closeFd(fd)
		return Stat{}, openFile{}, err
	}
	return unixStat(&st), openFile{fd: fd, name: name, ok: true}, nil
}

// readlink is the target of the symlink name inside the directory.
func (d *dirHandle) readlink(name string) (string, error) {
	buf := make([]byte, 4096)
	for {
		n, err := unix.Readlinkat(d.fd, name, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
}

// openDirAt opens the directory name inside parent, without following a link.
func openDirAt(parent *dirHandle, name string) (*dirHandle, error) {
	for {
		fd, err := unix.Openat(parent.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &dirHandle{fd: fd}, nil
	}
}
