package ledger

// The carry manifest: clean_room.carry names ignored paths (data, a virtualenv, a
// gitignored scorer) that the clean room copies in. They are outside git, so the file
// guard cannot see an edit there. The ledger keeps a manifest of them as a human
// accepted them (at prepare, or `hgate state rebase`): every file's path, mode and
// digest, every symlink's target. The digest is keyed (internal/digest): the manifest is
// in the ledger, which the agent can read, and clean_room.test_only files are carried
// too, so a plain SHA-256 of a small answer file would give the answer away. Before a benchmark runs, the carried files it will
// see are compared with it.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hgate/hgate/internal/digest"
)

// Manifest lists the carried files as accepted.
type Manifest struct {
	Paths []string       `json:"paths"` // clean_room.carry as configured
	Files []CarriedEntry `json:"files"` // sorted by Path
	// Outside is clean_room.read and clean_room.test_only outside what git and the
	// carried paths cover (see outside.go); absent when they name nothing.
	Outside *Outside `json:"outside,omitempty"`
}

// CarriedEntry is one carried file or symlink; directories are implied by their files.
type CarriedEntry struct {
	Path   string `json:"path"`             // slash path relative to the repository root
	Mode   string `json:"mode"`             // permission bits, octal
	SHA256 string `json:"sha256,omitempty"` // keyed (internal/digest) since keys exist
	Link   string `json:"link,omitempty"`   // a symlink's target (its content is not followed)
	// A listed file outside the repository (outside.go) has its size and modification
	// time instead of a digest.
	Size  int64  `json:"size,omitempty"`
	MTime string `json:"mtime,omitempty"`
}

func (m *Manifest) marshal() ([]byte, error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("ledger: %s: %w", carryFile, err)
	}
	return append(data, '\n'), nil
}

// BuildManifest hashes the carried paths as they are under root (the repository, or a
// clean room holding copies) under key (nil: plain SHA-256, for a workspace prepared
// before keys). A missing path has no entries. Symlinks are recorded, not
// followed; sockets, pipes and devices are left out, as the clean room leaves them.
func BuildManifest(root string, paths []string, key *digest.Key) (*Manifest, error) {
	m := &Manifest{Paths: slices.Clone(paths), Files: []CarriedEntry{}}
	if m.Paths == nil {
		m.Paths = []string{}
	}
	seen := map[string]bool{}
	for _, p := range paths {
		rel := strings.TrimSuffix(path.Clean(filepath.ToSlash(p)), "/")
		src := filepath.Join(root, filepath.FromSlash(rel))
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			r, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			name := filepath.ToSlash(r)
			if d.IsDir() || seen[name] {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			e := CarriedEntry{Path: name, Mode: fmt.Sprintf("%04o", info.Mode().Perm())}
			switch {
			case d.Type()&fs.ModeSymlink != 0:
				if e.Link, err = os.Readlink(p); err != nil {
					return err
				}
			case d.Type().IsRegular():
				if e.SHA256, err = hashFile(p, key); err != nil {
					return err
				}
			default:
				return nil
			}
			seen[name] = true
			m.Files = append(m.Files, e)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("clean_room.carry: %s: %w", p, err)
		}
	}
	slices.SortFunc(m.Files, func(a, b CarriedEntry) int { return strings.Compare(a.Path, b.Path) })
	return m, nil
}

func hashFile(p string, key *digest.Key) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return key.Reader(f)
}

// Keyed reports whether m's digests were taken under a key.
func (m *Manifest) Keyed() bool {
	keyed := func(e CarriedEntry) bool { return digest.Keyed(e.SHA256) }
	return slices.ContainsFunc(m.Files, keyed) || m.Outside != nil && slices.ContainsFunc(m.Outside.Files, keyed)
}

// Carry returns the accepted carry manifest at the ledger tip; nil when the ledger has
// none (no ledger, or one older than manifests).
func (l *Ledger) Carry() (*Manifest, error) {
	tip, err := l.Tip()
	if err != nil || tip.IsZero() {
		return nil, err
	}
	data, err := l.repo.FileAt(tip, carryFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("ledger %s: %s: %w", tip.String()[:7], carryFile, err)
	}
	return &m, nil
}

// Differences lists, one line each, how now differs from the accepted manifest m. Write
// permission is not compared: the clean room copies carried files read-only.
func (m *Manifest) Differences(now *Manifest) []string {
	var out []string
	if !slices.Equal(m.Paths, now.Paths) {
		out = append(out, fmt.Sprintf("clean_room.carry is [%s], but the accepted files were those of [%s]",
			strings.Join(now.Paths, ", "), strings.Join(m.Paths, ", ")))
	}
	old := map[string]CarriedEntry{}
	for _, e := range m.Files {
		old[e.Path] = e
	}
	for _, e := range now.Files {
		o, ok := old[e.Path]
		delete(old, e.Path)
		if !ok {
			out = append(out, fmt.Sprintf("clean_room.carry: %s added since the carried files were accepted", e.Path))
			continue
		}
		if d := entryChange(o, e); d != "" {
			out = append(out, fmt.Sprintf("clean_room.carry: %s changed since it was accepted (%s)", e.Path, d))
		}
	}
	for _, e := range m.Files {
		if _, ok := old[e.Path]; ok {
			out = append(out, fmt.Sprintf("clean_room.carry: %s removed since the carried files were accepted", e.Path))
		}
	}
	slices.Sort(out)
	return out
}

// entryChange says what differs between two versions of a carried entry, "" if nothing.
func entryChange(o, n CarriedEntry) string {
	var parts []string
	switch {
	case (o.Link != "") != (n.Link != ""):
		if o.Link != "" {
			return "was a symlink, now a file"
		}
		return "was a file, now a symlink to " + n.Link
	case o.Link != n.Link:
		parts = append(parts, fmt.Sprintf("symlink to %s, now to %s", o.Link, n.Link))
	case o.SHA256 != n.SHA256:
		parts = append(parts, fmt.Sprintf("digest %.12s → %.12s", digest.Hex(o.SHA256), digest.Hex(n.SHA256)))
	}
	if o.Link == "" && n.Link == "" && maskWrite(o.Mode) != maskWrite(n.Mode) {
		parts = append(parts, fmt.Sprintf("mode %s → %s, write bits aside", maskWrite(o.Mode), maskWrite(n.Mode)))
	}
	return strings.Join(parts, "; ")
}

func maskWrite(mode string) string {
	var m uint32
	fmt.Sscanf(mode, "%o", &m)
	return fmt.Sprintf("%04o", m&^0o222)
}
