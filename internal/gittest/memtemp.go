package gittest

import (
	"os"
	"path/filepath"

	"github.com/hgate/hgate/internal/scratch"
)

// memoryParent is where MemoryTemp makes its folder: a tmpfs on Linux.
const memoryParent = "/dev/shm"

// memoryPrefix names MemoryTemp's folders; the pid and start time that follow
// (scratch.MkdirTemp) let a later test binary remove those of one that was killed.
const memoryPrefix = "gittest-tmp-"

// MemoryTemp points TMPDIR at a new folder of this test process's own in /dev/shm, so
// that everything the package's tests put in the temporary directory (t.TempDir, New's,
// Copy's and Template's repositories, hgate's clean rooms and traces) is in memory, and
// returns the function that removes it, which TestMain calls after m.Run. It changes
// nothing when TMPDIR is set (the caller's choice stands), or /dev/shm is not there, is
// mounted noexec or has less than memoryMinFree free (a container's), or cannot take the
// folder: the tests then use the default temporary directory, as before.
//
// Why: the tests of a package that makes repositories create and remove tens of
// thousands of files a minute. On an ext4 file system without a journal (the small VMs
// the suite is timed on), each new inode is searched for past every inode of its group
// removed in the last minute (ext4's recently_deleted check), so each file made costs
// more the more were removed before it; gitguard's quick tests took about a third less
// CPU on tmpfs. What the tests check does not depend on the file system.
func MemoryTemp() (remove func()) {
	if os.Getenv("TMPDIR") != "" || !memoryUsable(memoryParent) {
		return func() {}
	}
	if entries, err := os.ReadDir(memoryParent); err == nil {
		for _, e := range entries {
			if e.IsDir() && scratch.Orphaned(e.Name(), memoryPrefix) {
				os.RemoveAll(filepath.Join(memoryParent, e.Name())) // a killed test binary's
			}
		}
	}
	dir, err := scratch.MkdirTemp(memoryParent, memoryPrefix)
	if err != nil {
		return func() {}
	}
	if err := os.Setenv("TMPDIR", dir); err != nil {
		os.Remove(dir)
		return func() {}
	}
	return func() {
		os.Unsetenv("TMPDIR")
		os.RemoveAll(dir)
	}
}
