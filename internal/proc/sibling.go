package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Sibling finds the executable name (".exe" added on Windows by exec.LookPath) the way
// git finds its git-<cmd> helpers: in the directory of this process's own executable
// (symlinks resolved, so a link to hgate on PATH still finds its installed companion),
// else on PATH. The error names both places it looked.
func Sibling(name string) (string, error) {
	var dir string
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		dir = filepath.Dir(self)
		if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	where := "the folder of this executable (unknown here)"
	if dir != "" {
		where = dir + " (next to this executable)"
	}
	return "", fmt.Errorf("%s is in neither %s nor a PATH directory", name, where)
}
