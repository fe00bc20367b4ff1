package agentcli

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hgate/hgate/cleanroom"
)

// CopyTree copies a folder's regular files (symlinks are left out: a link could name
// anything of the user's): how an active skill's folder reaches a CLI.
func CopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return cleanroom.CopyFile(p, to, info.Mode().Perm()|0o400)
		}
		return nil
	})
}
