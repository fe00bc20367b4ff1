package cleanroom

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hgate/hgate/internal/fsafe"
)

// envAlways are passed to tasks in the clean room besides clean_room.env: what a command
// needs to be found and to print text, and nothing that changes what it computes.
var envAlways = []string{"PATH", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME"}

// scrubEnv keeps only the allowed variables, never a GIT_* one, sets HOME and TMPDIR to
// the room's own folders, and drops PATH entries that are relative or inside the
// repository, where the agent could have planted a shim of git or python.
func scrubEnv(environ, allow []string, repoRoot, home, tmp string) []string {
	keep := append(slices.Clone(envAlways), allow...)
	out := []string{"HOME=" + home, "TMPDIR=" + tmp}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !slices.Contains(keep, k) || strings.HasPrefix(k, "GIT_") || k == "HOME" || k == "TMPDIR" {
			continue
		}
		if k == "PATH" {
			v = CleanPath(v, repoRoot)
		}
		out = append(out, k+"="+v)
	}
	return out
}

// CleanPath is PATH without its relative entries and those inside the repository: the
// tasks' PATH, and what the loop keeps out of its agent's write set.
func CleanPath(path, repoRoot string) string {
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) || dir == repoRoot || strings.HasPrefix(dir, repoRoot+string(filepath.Separator)) {
			continue
		}
		keep = append(keep, dir)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// carry copies rel (a file or a folder, slash-separated) under src (the worktree, which
// a sandbox may have written) to dst and makes the copy read-only. The source is read
// through fsafe, relative to src's descriptor: a link at rel or at any of its parents is
// never followed, links inside are copied as links, sockets, pipes and devices stay
// behind, and a file with more than one link (its other name may be hidden data) is
// refused. dst is in the room hgate has just made, before any task runs in it.
func carry(src *fsafe.Root, rel, dst string) error {
	fi, err := src.Lstat(rel)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return carryEntry(src, rel, fi.Mode().Type(), dst)
	}
	d, err := src.OpenDir(rel)
	if err != nil {
		return err
	}
	defer d.Close()
	dirs := []string{dst}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	err = d.Walk(func(name string, e fs.DirEntry) error {
		target := filepath.Join(dst, filepath.FromSlash(name))
		if e.IsDir() {
			dirs = append(dirs, target)
			return os.MkdirAll(target, 0o755)
		}
		return carryEntry(d, name, e.Type(), target)
	})
	if err != nil {
		return err
	}
	// Folders last, deepest first, so their files could still be created.
	for _, d := range slices.Backward(dirs) {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}

// carryEntry copies the link or regular file name under src, of type t, to dst.
func carryEntry(src *fsafe.Root, name string, t fs.FileMode, dst string) error {
	switch {
	case t&fs.ModeSymlink != 0:
		link, err := src.Readlink(name)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.Symlink(link, dst)
	case t.IsRegular():
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		in, err := src.Open(name, -1)
		if err != nil {
			return err
		}
		defer in.Close()
		return copyOpen(in, dst)
	}
	return nil // sockets, pipes and devices stay behind
}

// copyOpen copies the open file in to a new file dst (streamed, never read whole), with
// in's permissions less every write bit.
func copyOpen(in *os.File, dst string) error {
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, fi.Mode().Perm()&^0o222)
}
