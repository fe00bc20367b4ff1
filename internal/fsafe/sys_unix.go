//go:build unix

package fsafe

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenRoot opens the folder dir; its last component must not be a link.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open folder", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat folder", Path: dir, Err: err}
	}
	record("root", dir, "")
	return &Root{fd: fd, path: dir, dev: uint64(st.Dev)}, nil
}

// Close releases the folder's descriptor.
func (r *Root) Close() error {
	if r == nil || r.fd < 0 {
		return nil
	}
	err := unix.Close(r.fd)
	r.fd = -1
	return err
}

// OpenDir opens the folder name under r as a Root of its own.
func (r *Root) OpenDir(name string) (*Root, error) {
	fd, err := r.openat(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	record("opendir", r.path, name)
	return &Root{fd: fd, path: r.Join(name), dev: r.dev}, nil
}

// Open opens the regular, singly linked file name for reading; max bounds its size
// (a negative max: no bound).
func (r *Root) Open(name string, max int64) (*os.File, error) {
	record("read", r.path, name)
	fd, err := r.openat(name, unix.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	if err := checkFile(fd, max); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: r.Join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), r.Join(name)), nil
}

// Create creates the new file name for writing (O_EXCL: nothing may be there).
func (r *Root) Create(name string, perm os.FileMode) (*os.File, error) {
	record("create", r.path, name)
	fd, err := r.openat(name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), r.Join(name)), nil
}

// Append opens the existing regular, singly linked file name for appending.
func (r *Root) Append(name string) (*os.File, error) {
	record("append", r.path, name)
	fd, err := r.openat(name, unix.O_WRONLY|unix.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	if err := checkFile(fd, -1); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "append", Path: r.Join(name), Err: err}
	}
	return os.NewFile(uintptr(fd), r.Join(name)), nil
}

// ReadDir lists the folder name ("." for the Root itself), sorted by name. The entries'
// types are those of the names themselves: a link is listed as a link.
func (r *Root) ReadDir(name string) ([]os.DirEntry, error) {
	record("readdir", r.path, name)
	var fd int
	var err error
	if name == "." {
		fd, err = unix.Openat(r.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	} else {
		fd, err = r.openat(name, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	}
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), r.Join(name))
	defer f.Close()
	ents, err := f.ReadDir(-1)
	slices.SortFunc(ents, func(a, b os.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return ents, err
}

// Mkdir makes the folder name (its parent must exist).
func (r *Root) Mkdir(name string, perm os.FileMode) error {
	record("mkdir", r.path, name)
	dfd, base, err := r.parent(name)
	if err != nil {
		return err
	}
	defer closeParent(r, dfd)
	if err := unix.Mkdirat(dfd, base, uint32(perm.Perm())); err != nil {
		return &fs.PathError{Op: "mkdir", Path: r.Join(name), Err: err}
	}
	return nil
}

// MkdirAll makes the folder name and any missing parent; a link at any component fails.
func (r *Root) MkdirAll(name string, perm os.FileMode) error {
	if err := checkName(name); err != nil {
		return err
	}
	parts := strings.Split(name, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		err := r.Mkdir(sub, perm)
		if err == nil || !errors.Is(err, fs.ErrExist) {
			if err != nil {
				return err
			}
			continue
		}
		// There already: it must be a folder, not a link to one. Lstat needs no right on
		// it, which its owner may have taken away.
		fi, err := r.Lstat(sub)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: r.Join(sub), Err: unix.ENOTDIR}
		}
	}
	return nil
}

// Remove removes the file, link or empty folder name itself; it never follows a link.
func (r *Root) Remove(name string) error {
	record("remove", r.path, name)
	dfd, base, err := r.parent(name)
	if err != nil {
		return err
	}
	defer closeParent(r, dfd)
	err = unix.Unlinkat(dfd, base, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		if derr := unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR); derr != unix.ENOTDIR {
			err = derr
		}
	}
	if err != nil {
		return &fs.PathError{Op: "remove", Path: r.Join(name), Err: err}
	}
	return nil
}

// RemoveAll removes name and, when it is a folder, everything below it, by descriptor;
// a missing name is no error. It holds two folders open at a time however deep the
// tree: a tree thousands of folders deep (which a sandboxed process can make) costs
// neither descriptors nor stack, and nothing below name is ever looked up from the top.
func (r *Root) RemoveAll(name string) error {
	err := r.Remove(name)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
		return err
	}
	top, err := r.OpenDirOwned(name)
	if err != nil {
		return err
	}
	err = top.empty()
	top.Close()
	if err != nil {
		return err
	}
	return r.Remove(name)
}

// OpenDirOwned opens the folder name, first making it its owner's to read, write and
// search when it is not: a clean room's read-only folders, a module cache, a folder a task
// locked, or a folder of its write set an agent took its owner's rights from (chmod 000)
// to stop hgate, run as the same user, at its next step there.
func (r *Root) OpenDirOwned(name string) (*Root, error) {
	d, err := r.OpenDir(name)
	if err == nil {
		if unix.Faccessat(d.fd, ".", unix.W_OK|unix.X_OK, 0) == nil {
			return d, nil
		}
		d.Close()
	} else if !errors.Is(err, fs.ErrPermission) {
		return nil, err
	}
	if err := r.Chmod(name, 0o700); err != nil {
		return nil, err
	}
	return r.OpenDir(name)
}

// empty removes everything in r, a level at a time: its files go, and each folder in
// it is emptied of its files and has its own folders moved up into r, then goes. What
// was moved up is a later pass's work, so the walk never goes more than one folder down.
func (r *Root) empty() error {
	moved := 0
	for {
		ents, err := r.ReadDir(".")
		if err != nil || len(ents) == 0 {
			return err
		}
		for _, e := range ents {
			if e.IsDir() {
				err = r.lift(e.Name(), &moved)
			}
			if err == nil {
				err = r.Remove(e.Name())
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
}

// lift empties the folder name in r by one level: its files are removed, its folders
// renamed into r under fresh names (everything in r is being removed, so a name taken
// by one of them only means trying the next).
func (r *Root) lift(name string, moved *int) error {
	d, err := r.OpenDirOwned(name)
	if err != nil {
		return err
	}
	defer d.Close()
	ents, err := d.ReadDir(".")
	if err != nil {
		return err
	}
	for _, e := range ents {
		if !e.IsDir() {
			if err := d.Remove(e.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			continue
		}
		if err := d.moveUp(e.Name(), r, moved); err != nil {
			return err
		}
	}
	return nil
}

// moveUp renames the folder name in r into dst under a fresh name. A folder moves only
// when its owner may write it (its ".." changes), so one that is not is made so first.
func (r *Root) moveUp(name string, dst *Root, moved *int) error {
	chmodded := false
	for {
		*moved++
		err := r.RenameTo(name, dst, fmt.Sprintf(".hgate-removing-%d", *moved))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fs.ErrPermission) && !chmodded:
			chmodded = true
			if err := r.Chmod(name, 0o700); err != nil {
				return err
			}
		case !errors.Is(err, unix.EEXIST) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.EISDIR):
			return err
		}
	}
}

// Rename renames oldname to newname, both under r. Neither is followed: a link at
// newname is replaced, not written through; a folder at newname makes it fail unless
// oldname is a folder too.
func (r *Root) Rename(oldname, newname string) error { return r.RenameTo(oldname, r, newname) }

// RenameTo renames oldname under r to newname under dst (on the same file system), as
// Rename does.
func (r *Root) RenameTo(oldname string, dst *Root, newname string) error {
	record("rename", r.path, oldname)
	record("rename", dst.path, newname)
	ofd, obase, err := r.parent(oldname)
	if err != nil {
		return err
	}
	defer closeParent(r, ofd)
	nfd, nbase, err := dst.parent(newname)
	if err != nil {
		return err
	}
	defer closeParent(dst, nfd)
	if err := unix.Renameat(ofd, obase, nfd, nbase); err != nil {
		return &os.LinkError{Op: "rename", Old: r.Join(oldname), New: dst.Join(newname), Err: err}
	}
	return nil
}

// TempFile is a new file with no name, in dir (a folder no sandbox can write), for
// reading and writing: what a sandboxed process prints is kept there until hgate copies
// it where it belongs, so nothing can be planted at its name meanwhile.
func TempFile(dir string) (*os.File, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	if oTmpfile != 0 {
		if fd, err := unix.Open(dir, oTmpfile|unix.O_RDWR|unix.O_CLOEXEC, 0o600); err == nil {
			return os.NewFile(uintptr(fd), dir+"/(unnamed)"), nil
		}
	}
	f, err := os.CreateTemp(dir, "hgate-anon-") // O_EXCL with a random name, removed at once
	if err != nil {
		return nil, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Chmod sets the mode of the file or folder name (never of a link's target). It needs
// no permission on name itself: a folder a task made unreadable (mode 000) can be made
// removable again.
func (r *Root) Chmod(name string, perm os.FileMode) error {
	record("chmod", r.path, name)
	fd, err := r.openat(name, chmodOpen, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		err = unix.ELOOP
	}
	if err == nil {
		err = fchmodPath(fd, uint32(perm.Perm()))
	}
	if err != nil {
		return &fs.PathError{Op: "chmod", Path: r.Join(name), Err: err}
	}
	return nil
}

// Readlink is the target of the link name (the link itself is never followed).
func (r *Root) Readlink(name string) (string, error) {
	record("readlink", r.path, name)
	dfd, base, err := r.parent(name)
	if err != nil {
		return "", err
	}
	defer closeParent(r, dfd)
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dfd, base, buf)
	if err != nil {
		return "", &fs.PathError{Op: "readlink", Path: r.Join(name), Err: err}
	}
	return string(buf[:n]), nil
}

// parent opens the folder holding name (r itself for a one-component name) and returns
// its descriptor with name's last component.
func (r *Root) parent(name string) (int, string, error) {
	if err := checkName(name); err != nil {
		return -1, "", err
	}
	dir, base := path.Split(name)
	if dir == "" {
		return r.fd, base, nil
	}
	fd, err := r.openat(strings.TrimSuffix(dir, "/"), unix.O_RDONLY|unix.O_DIRECTORY, 0)
	return fd, base, err
}

func closeParent(r *Root, fd int) {
	if fd != r.fd {
		unix.Close(fd)
	}
}

// checkFile: fd is a regular file with one link and, with max ≥ 0, at most max bytes.
func checkFile(fd int, max int64) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return ErrNotRegular
	case st.Nlink != 1:
		return ErrLinked
	case max >= 0 && st.Size > max:
		return fmt.Errorf("%d bytes, over %d: %w", st.Size, max, ErrTooLarge)
	}
	return nil
}

// openat opens name beneath r with flags, never following a link, never blocking.
func (r *Root) openat(name string, flags int, mode uint32) (int, error) {
	if err := checkName(name); err != nil {
		return -1, err
	}
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC | nonblock(flags)
	fd, err := openat2(r.fd, name, flags, mode)
	if err == errNoOpenat2 {
		fd, err = r.walk(name, flags, mode)
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: r.Join(name), Err: err}
	}
	return fd, nil
}

// walk is openat2's stand-in: one component at a time with O_NOFOLLOW, each folder on
// the Root's device.
func (r *Root) walk(name string, flags int, mode uint32) (int, error) {
	parts := strings.Split(name, "/")
	cur := r.fd
	defer func() {
		if cur != r.fd {
			unix.Close(cur)
		}
	}()
	for _, p := range parts[:len(parts)-1] {
		fd, err := unix.Openat(cur, p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
		if err != nil {
			return -1, err
		}
		if cur != r.fd {
			unix.Close(cur)
		}
		cur = fd
		if err := r.sameDev(cur); err != nil {
			return -1, err
		}
	}
	fd, err := unix.Openat(cur, parts[len(parts)-1], flags, mode)
	if err != nil {
		return -1, err
	}
	if err := r.sameDev(fd); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func (r *Root) sameDev(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if uint64(st.Dev) != r.dev {
		return unix.EXDEV
	}
	return nil
}

// NoFollow is O_NOFOLLOW, for a caller's own os.OpenFile of a file that no sandbox can
// reach (hgate's state under .git/hgate) and that must not be a link all the same.
const NoFollow = unix.O_NOFOLLOW

// Symlink makes the new link name pointing at target (which is never resolved here).
func (r *Root) Symlink(target, name string) error {
	record("symlink", r.path, name)
	dfd, base, err := r.parent(name)
	if err != nil {
		return err
	}
	defer closeParent(r, dfd)
	if err := unix.Symlinkat(target, dfd, base); err != nil {
		return &os.LinkError{Op: "symlink", Old: target, New: r.Join(name), Err: err}
	}
	return nil
}
