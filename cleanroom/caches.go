package cleanroom

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// CachesDir is where clean_room.caches live, relative to the git common directory:
// outside every worktree (the guard never sees them, and a checkout never
// removes them) and inside .git, which the loop's agent may not write.
const CachesDir = "hgate/caches"

// Cache is one clean_room.caches folder and the variable that names it to tasks.
type Cache struct{ Env, Dir string }

// caches creates the clean_room.caches folders that do not exist yet and returns
// them by variable name. A cache is shared by every run request and every run, so
// what a train task leaves there (a build output, a download) serves the next one; a
// test-split task's writes stay in its private layer (see Rooms.policy).
func (rs *Rooms) caches() ([]Cache, error) {
	named := rs.Config.CleanRoom.Caches
	names := slices.Sorted(maps.Keys(named))
	if len(names) == 0 {
		return nil, nil
	}
	common := rs.Repo.CommonDir()
	root := filepath.Join(common, filepath.FromSlash(CachesDir))
	out := make([]Cache, 0, len(names))
	for _, env := range names {
		name := named[env]
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("clean room: cache %s: %w", name, err)
		}
		// MkdirAll follows symlinks: one planted on the way would hand tasks write
		// access to wherever it points.
		for p := dir; p != common; p = filepath.Dir(p) {
			fi, err := os.Lstat(p)
			if err != nil {
				return nil, fmt.Errorf("clean room: cache %s: %w", name, err)
			}
			if !fi.IsDir() {
				return nil, fmt.Errorf("clean room: cache %s: %s is not a folder (a symlink?); remove it", name, p)
			}
		}
		out = append(out, Cache{Env: env, Dir: dir})
	}
	return out, nil
}

// cacheDirs are the caches' folders.
func cacheDirs(caches []Cache) []string {
	out := make([]string, len(caches))
	for i, c := range caches {
		out[i] = c.Dir
	}
	return out
}

// privateCaches gives each cache an empty folder of its own in lane: where no private
// layer can be had, a test-split run never writes the shared folder.
func privateCaches(caches []Cache, lane string) ([]Cache, error) {
	out := make([]Cache, len(caches))
	for i, c := range caches {
		dir := filepath.Join(lane, "cache-"+filepath.Base(c.Dir))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("clean room: cache %s: %w", filepath.Base(c.Dir), err)
		}
		out[i] = Cache{Env: c.Env, Dir: dir}
	}
	return out, nil
}
