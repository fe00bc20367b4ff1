package refs

import (
	"io/fs"
	"path/filepath"
	"strings"
)

// List returns the value of every ref whose stored name starts with prefix,
// keyed by stored name (Stored does not apply: a caller that maps names maps
// them back). A loose ref hides its packed-refs line, as in git; a writer's
// NAME.lock is never a ref.
func (s *Store) List(prefix string) (map[string]string, error) {
	out, err := s.packed()
	if err != nil {
		return nil, err
	}
	for name := range out {
		if !strings.HasPrefix(name, prefix) {
			delete(out, name)
		}
	}
	root := filepath.Join(s.CommonDir, "refs")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return nil // no refs/ at all
			}
			return err
		}
		rel, _ := filepath.Rel(s.CommonDir, p)
		name := filepath.ToSlash(rel)
		if d.IsDir() || !strings.HasPrefix(name, prefix) || strings.HasSuffix(name, ".lock") {
			return nil
		}
		v, found, err := readLoose(p)
		if err != nil {
			return err
		}
		switch {
		case found && v != "":
			out[name] = v
		case found:
			delete(out, name) // a loose file git would not resolve hides the packed line too
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
