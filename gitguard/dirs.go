package gitguard

import (
	"path/filepath"
	"strings"
)

// CommonDir returns the absolute git directory shared by every worktree of the
// repository (objects, refs, config): where repository-wide locks belong.
func (r *Repo) CommonDir() string { return r.commonDir }

// ObjectTemps is where hgate writes a loose object (as go-git did) before renaming it into place: a process
// killed meanwhile, or a full disk, leaves the file behind. IsObjectTemp tells its files
// (tmp_obj_*) from git's own (tmp_pack_*, and git's tmp_obj_* in objects/xx/ are elsewhere).
func (r *Repo) ObjectTemps() string { return filepath.Join(r.commonDir, "objects", "pack") }

// IsObjectTemp reports whether a file name in ObjectTemps is one of hgate's (or go-git's) temporary files.
func IsObjectTemp(name string) bool { return strings.HasPrefix(name, "tmp_obj_") }
