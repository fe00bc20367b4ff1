package loop

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// entryAttr is what a sandboxed agent can change of a folder that stays a writable mount
// (sandbox.Policy.MountWrite), or of a workspace file it writes by design: its own mode,
// owner and extended attributes (ACLs included). Landlock does not govern them, and
// both are hgate's to use after the phase: a chmod 000 of the repository's root would
// stop the next git command, one of learnings.md the entry hgate appends.
type entryAttr struct {
	path     string
	mode     os.FileMode
	uid, gid int
	xattrs   []string
}

// snapshotAttrs records the attributes of each folder or file before the agent starts.
func snapshotAttrs(paths []string) ([]entryAttr, error) {
	out := make([]entryAttr, 0, len(paths))
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		if !(fi.IsDir() || fi.Mode().IsRegular()) || st == nil {
			return nil, fmt.Errorf("sandbox: %s is neither a folder nor a file", p)
		}
		out = append(out, entryAttr{path: p, mode: fi.Mode(), uid: int(st.Uid), gid: int(st.Gid), xattrs: xattrNames(p)})
	}
	return out, nil
}

// restoreAttrs puts back what the agent changed of the folders' and files' attributes,
// parents first (a parent of mode 000 would hide its children), and says which it
// changed. By name: in the agent's namespace each was a mount point (it could not rename
// or replace it) inside one it could not write.
func (jl *jail) restoreAttrs() ([]string, error) {
	var changed []string
	for _, f := range jl.attrs { // folders sorted as the worktree was walked (parents first), then files
		fi, err := os.Lstat(f.path)
		if err != nil {
			return changed, fmt.Errorf("sandbox: %w", err)
		}
		st, _ := fi.Sys().(*syscall.Stat_t)
		added := slices.DeleteFunc(xattrNames(f.path), func(n string) bool { return slices.Contains(f.xattrs, n) })
		if fi.Mode() == f.mode && st != nil && int(st.Uid) == f.uid && int(st.Gid) == f.gid && len(added) == 0 {
			continue
		}
		changed = append(changed, f.path)
		for _, n := range added {
			unix.Lremovexattr(f.path, n)
		}
		if err := os.Lchown(f.path, f.uid, f.gid); err != nil && os.Geteuid() == 0 {
			return changed, fmt.Errorf("sandbox: restore %s: %w", f.path, err)
		}
		if err := os.Chmod(f.path, f.mode); err != nil {
			return changed, fmt.Errorf("sandbox: restore %s: %w", f.path, err)
		}
	}
	return changed, nil
}

// xattrNames lists the extended attributes of path (none where it cannot).
func xattrNames(path string) []string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(path, buf)
	if err != nil || n <= 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
}
