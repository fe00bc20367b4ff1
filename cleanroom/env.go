package cleanroom

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
			v = cleanPath(v, repoRoot)
		}
		out = append(out, k+"="+v)
	}
	return out
}

func cleanPath(path, repoRoot string) string {
	var keep []string
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) || dir == repoRoot || strings.HasPrefix(dir, repoRoot+string(filepath.Separator)) {
			continue
		}
		keep = append(keep, dir)
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// carry copies src (a file or a folder) to dst and makes the copy read-only. Symlinks are
// copied as links; nothing outside src is read through them.
func carry(src, dst string) error {
	if _, err := os.Lstat(src); err != nil {
		return err
	}
	var dirs []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			dirs = append(dirs, target)
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			return CopyFile(p, target, info.Mode().Perm()&^0o222)
		}
		return nil // sockets, pipes and devices stay behind
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

// CopyFile copies src to a new file dst (streamed, never read whole) and gives it perm.
func CopyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
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
	return os.Chmod(dst, perm)
}
