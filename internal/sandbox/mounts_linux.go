package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// readOnly makes every mount of this (new, private) mount namespace read-only except at
// the paths in write, which stay as writable as they were. Landlock governs the contents
// of files and folders, not their attributes: without this, a tree that may read a file
// could still chmod, chown, utime or setxattr what it owns outside its write set (the
// agent's chmod 000 of .git/objects), and every read would update an access time a later
// process can stat (a test task's read of a chosen file under /usr/share). A read-only
// mount refuses the former (EROFS) and never updates access times; unlike noatime it can
// be set inside a user namespace on the mounts it inherited.
//
// Each write path and each folder is first cloned as it is (open_tree, recursively: a file
// is a bind of that file), then every mount is made read-only at once (mount_setattr on /,
// recursive), then the clones are moved back over their paths, parents before children;
// in a folder, every entry that is not itself in write or folders is made read-only again
// (protect) before the write paths below it are moved back.
func readOnly(write, folders []string) error {
	folders = slices.DeleteFunc(slices.Clone(folders), func(f string) bool {
		return slices.ContainsFunc(write, func(w string) bool { return f == w || within(f, w) })
	})
	paths := slices.Sorted(slices.Values(slices.Concat(write, folders))) // a parent sorts before its children
	paths = slices.Compact(paths)
	fds := make([]int, len(paths))
	defer func() {
		for _, fd := range fds {
			if fd > 0 {
				unix.Close(fd)
			}
		}
	}()
	for i, w := range paths {
		fd, err := unix.OpenTree(unix.AT_FDCWD, w, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if errors.Is(err, unix.ENOENT) {
			fds[i] = -1 // restrict fails on it: the command never runs
			continue
		}
		if err != nil {
			return fmt.Errorf("read-only mounts: clone %s: %w", w, err)
		}
		fds[i] = fd
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("read-only mounts: %w", err)
	}
	for i, w := range paths {
		if fds[i] < 0 {
			continue
		}
		if err := unix.MoveMount(fds[i], "", unix.AT_FDCWD, w, unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_SYMLINKS); err != nil {
			return fmt.Errorf("read-only mounts: keep %s writable: %w", w, err)
		}
		if slices.Contains(folders, w) {
			if err := protect(w, paths); err != nil {
				return err
			}
		}
	}
	// The working folder still names the mount below a clone: look it up again.
	if wd, err := os.Getwd(); err == nil {
		os.Chdir(wd)
	}
	return nil
}

// protect makes every entry of folder (a writable mount now) read-only again but those in
// keep: a read-only clone of each is mounted over it. Symlinks are left: no mode of
// theirs means anything, and a mount cannot be put on one without following it.
func protect(folder string, keep []string) error {
	ents, err := os.ReadDir(folder)
	if err != nil {
		return fmt.Errorf("read-only mounts: list %s: %w", folder, err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	for _, e := range ents {
		p := filepath.Join(folder, e.Name())
		if e.Type()&fs.ModeSymlink != 0 || slices.Contains(keep, p) {
			continue
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			continue // gone since the listing: nothing to protect
		}
		if err != nil {
			return fmt.Errorf("read-only mounts: clone %s: %w", p, err)
		}
		err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
		if err == nil {
			err = unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
		}
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("read-only mounts: protect %s: %w", p, err)
		}
	}
	return nil
}

// writeMounts is what stays writable in the namespace of p: its Write paths but the
// Layered ones (read-only below their overlay, whose own mount is writable), and the
// LayerDir the overlays keep their upper and work folders in.
func writeMounts(p Policy) []string {
	out := slices.DeleteFunc(slices.Clone(p.Write), func(w string) bool { return slices.Contains(p.Layered, w) })
	if p.LayerDir != "" {
		out = append(out, p.LayerDir)
	}
	return out
}

// within reports whether path is strictly below dir.
func within(path, dir string) bool {
	if dir == "/" {
		return path != "/"
	}
	return strings.HasPrefix(path, dir+"/")
}
