//go:build darwin || freebsd || linux

package walk

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

// fdDir is the walk's directory on macOS and FreeBSD: every name is read, stat'ed and
// opened relative to the open directory, never by a path walked again, and nothing
// follows a link, so a worktree folder swapped for a link between two calls is not
// followed. It uses only calls these systems share with Linux (openat, fstatat,
// readlinkat), so it builds and is tested on Linux too; Linux's own dirHandle
// (dir_linux.go) reads raw entries without allocating instead.
type fdDir struct{ fd int }

const fdOpenFlags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC

func openFdDir(path string) (*fdDir, error) {
	fd, err := retry(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return &fdDir{fd: fd}, nil
}

// retry calls f again while it is interrupted by a signal.
func retry(f func() (int, error)) (int, error) {
	for {
		r, err := f()
		if err != unix.EINTR {
			return r, err
		}
	}
}

func (d *fdDir) close() { unix.Close(d.fd) }

// openSub opens the directory name inside d, without following a link.
func (d *fdDir) openSub(name string) (*fdDir, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	return &fdDir{fd: fd}, nil
}

// entries appends the directory's entries to out, read through a duplicate of the
// descriptor (os.File closes what it is given).
func (d *fdDir) entries(_ *[]byte, out []dirent) ([]dirent, error) {
	dup, err := retry(func() (int, error) { return unix.Dup(d.fd) })
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(dup)
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		return nil, err
	}
	return appendDirents(out, ents), nil
}

// stat is lstat of a name inside the directory.
func (d *fdDir) stat(name string) (Stat, error) {
	var st unix.Stat_t
	if _, err := retry(func() (int, error) { return 0, unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return Stat{}, &fs.PathError{Op: "fstatat", Path: name, Err: err}
	}
	return fdStat(&st), nil
}

// fdStat takes the fields git keeps in the index from a stat struct.
func fdStat(st *unix.Stat_t) Stat {
	return Stat{
		Mode:   uint32(st.Mode),
		CtimeS: int64(st.Ctim.Sec), CtimeN: int64(st.Ctim.Nsec),
		MtimeS: int64(st.Mtim.Sec), MtimeN: int64(st.Mtim.Nsec),
		Ino: uint64(st.Ino), UID: st.Uid, GID: st.Gid, Size: int64(st.Size), Nlink: uint64(st.Nlink),
	}
}

// openStat opens the file name inside the directory for reading (without following a
// link or blocking on a fifo) and returns its stat data from the descriptor, as
// Linux's dirHandle does.
func (d *fdDir) openStat(name string) (Stat, openFile, error) {
	fd, err := retry(func() (int, error) { return unix.Openat(d.fd, name, fdOpenFlags, 0) })
	if err != nil {
		return Stat{}, openFile{}, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	var st unix.Stat_t
	if _, err := retry(func() (int, error) { return 0, unix.Fstat(fd, &st) }); err != nil {
		unix.Close(fd)
		return Stat{}, openFile{}, &fs.PathError{Op: "fstat", Path: name, Err: err}
	}
	return fdStat(&st), openFile{fd: fd, name: name, ok: true}, nil
}

// hashFile hashes the regular file name inside the directory as a blob of size bytes
// (its lstat size): opened without following a link or blocking on a fifo, and content
// of another size, or a file no longer regular, is an error.
func (d *fdDir) hashFile(name string, size int64) (plumbing.Hash, error) {
	fd, err := retry(func() (int, error) { return unix.Openat(d.fd, name, fdOpenFlags, 0) })
	if err != nil {
		return plumbing.ZeroHash, &fs.PathError{Op: "openat", Path: name, Err: err}
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return plumbing.ZeroHash, &fs.PathError{Op: "open", Path: name, Err: syscall.EINVAL}
	}
	h := plumbing.NewHasher(plumbing.BlobObject, size)
	if n, err := io.Copy(h, io.LimitReader(f, size+1)); err != nil || n != size {
		return plumbing.ZeroHash, fmt.Errorf("%s changed while it was read (%v)", name, err)
	}
	return h.Sum(), nil
}

// readlink is the target of the symlink name inside the directory.
func (d *fdDir) readlink(name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := retry(func() (int, error) { return unix.Readlinkat(d.fd, name, buf) })
	if err != nil {
		return "", &fs.PathError{Op: "readlinkat", Path: name, Err: err}
	}
	return string(buf[:n]), nil
}
