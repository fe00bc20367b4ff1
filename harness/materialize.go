package harness

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// Files is what Materialize needs of the repository: a commit's files by slash path.
type Files interface {
	FilesAt(commit plumbing.Hash) (map[string][]byte, error)
}

// Materialize writes the harness folder as the registry's commit on refs/hgate/harness
// holds it — the bytes qualification copied into its clean room and judged — into dir,
// read-only (files r-x, folders r-x): what an agent is given runs from there, so that an
// edit to the worktree's harness folder after qualification is not what runs. dir is
// replaced.
func Materialize(repo Files, reg *Registry, dir string) error {
	if err := Unseal(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if reg == nil || reg.Commit == "" {
		return nil
	}
	files, err := repo.FilesAt(plumbing.NewHash(reg.Commit))
	if err != nil {
		return fmt.Errorf("refs/hgate/harness %s: %w", reg.Commit, err)
	}
	for p, data := range files {
		rel, ok := strings.CutPrefix(p, "harness/")
		if !ok || data == nil {
			continue // the qualification report, beside the folder
		}
		to := filepath.Join(dir, filepath.FromSlash(rel))
		if !filepath.IsLocal(filepath.FromSlash(rel)) {
			return fmt.Errorf("refs/hgate/harness %s: %s is not a path inside the folder", reg.Commit, p)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(to, data, 0o555); err != nil {
			return err
		}
	}
	return seal(dir)
}

// seal makes every folder under dir read-only (its files already are).
func seal(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
		err = os.Chmod(dirs[i], 0o555)
	}
	return err
}

// Unseal makes the folders under a materialized dir writable again, so that it can be
// removed; a dir that is not there is nothing to do.
func Unseal(dir string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return nil
	})
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

// Relocate is how an activated server is started from the materialized folder mat: its
// cwd, and every argument (and the command) that names a path inside the harness folder
// (dir, slash, relative to the repository root), point into mat instead; a cwd outside
// the harness folder stays in the worktree (root), where the tool does its work.
func (m *MCP) Relocate(root, dir, mat string) (command string, args []string, cwd string) {
	hdir := filepath.Join(root, filepath.FromSlash(dir))
	orig := filepath.Join(root, filepath.FromSlash(m.Cwd))
	into := func(abs string) (string, bool) {
		rel, err := filepath.Rel(hdir, abs)
		if err != nil || !filepath.IsLocal(rel) && rel != "." {
			return "", false
		}
		return filepath.Join(mat, rel), true
	}
	cwd = orig
	to, moved := into(orig)
	if moved {
		cwd = to
	}
	path := func(a string) string {
		if a == "" || strings.HasPrefix(a, "-") {
			return a
		}
		if !strings.ContainsRune(a, '/') {
			return a // a program on PATH, a plain word, or a file of the cwd (relocated with it)
		}
		abs := a
		if !filepath.IsAbs(a) {
			abs = filepath.Join(orig, a)
		}
		if to, ok := into(abs); ok {
			return to
		}
		if moved {
			return abs // a path out of the harness folder, from a cwd that moved into mat
		}
		return a
	}
	command = path(m.Command)
	for _, a := range m.Args {
		args = append(args, path(a))
	}
	return command, args, cwd
}
