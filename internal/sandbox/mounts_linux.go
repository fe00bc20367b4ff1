package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"

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
// Each write path is first cloned as it is (open_tree, recursively: a file is a bind of
// that file), then every mount is made read-only at once (mount_setattr on /, recursive),
// then the clones are moved back over their paths, parents before children.
func readOnly(write []string) error {
	paths := slices.Sorted(slices.Values(write)) // a parent sorts before its children
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
	}
	// The working folder still names the mount below a clone: look it up again.
	if wd, err := os.Getwd(); err == nil {
		os.Chdir(wd)
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
