package ledger

// Data outside the repository: clean_room.read and clean_room.test_only may name folders
// outside the tree (a test split's expected answers, a model). Neither git nor the carry
// manifest sees them, so an agent that runs as the same user (manual mode) could rewrite
// the test split's answers there and score 1.0 with no change in the repository. prepare
// records them beside the carry manifest, and every command that runs the benchmark
// compares them first: a change stops hgate until `hgate prepare --reset` takes a new
// baseline. A path whose files fit in MaxHashBytes and MaxHashFiles has each file's keyed
// digest recorded; a larger one (a model, a dataset) only a listing of names, sizes and
// modification times, which a rewrite that keeps both can pass.

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hgate/hgate/internal/digest"
)

// The bounds under which a path's files are hashed rather than only listed.
const (
	MaxHashBytes = 64 << 20
	MaxHashFiles = 10_000
)

// Outside lists the data outside the repository as prepare recorded it.
type Outside struct {
	Paths  []string       `json:"paths"`            // absolute, sorted
	Listed []string       `json:"listed,omitempty"` // those of Paths only listed, not hashed
	Files  []CarriedEntry `json:"files"`            // absolute paths, sorted
}

// BuildOutside records paths (absolute) under key. Without a key (a workspace prepared
// before keys) nothing is hashed, only listed: a plain digest of test-only data in the
// ledger would give it away.
func BuildOutside(paths []string, key *digest.Key) (*Outside, error) {
	o := &Outside{Paths: slices.Sorted(slices.Values(paths)), Files: []CarriedEntry{}}
	o.Paths = slices.Compact(o.Paths)
	for _, p := range o.Paths {
		entries, bytes, err := listOutside(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		hash := key != nil && bytes <= MaxHashBytes && len(entries) <= MaxHashFiles
		if !hash {
			o.Listed = append(o.Listed, p)
		}
		for _, e := range entries {
			if hash && e.Link == "" {
				if e.SHA256, err = hashFile(e.Path, key); err != nil {
					return nil, err
				}
				e.Size, e.MTime = 0, ""
			}
			o.Files = append(o.Files, e)
		}
	}
	slices.SortFunc(o.Files, func(a, b CarriedEntry) int { return strings.Compare(a.Path, b.Path) })
	o.Files = slices.CompactFunc(o.Files, func(a, b CarriedEntry) bool { return a.Path == b.Path })
	return o, nil
}

// listOutside lists p's regular files (size and modification time) and symlinks (not
// followed below p; p itself is resolved), and their bytes in all. A missing p has none.
func listOutside(p string) ([]CarriedEntry, int64, error) {
	root, err := filepath.EvalSymlinks(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	var out []CarriedEntry
	var bytes int64
	err = filepath.WalkDir(root, func(f string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		name := filepath.Join(p, strings.TrimPrefix(f, root)) // as configured, not resolved
		e := CarriedEntry{Path: name, Mode: fmt.Sprintf("%04o", info.Mode().Perm())}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if e.Link, err = os.Readlink(f); err != nil {
				return err
			}
		case d.Type().IsRegular():
			e.Size, e.MTime = info.Size(), info.ModTime().UTC().Format(time.RFC3339Nano)
			bytes += info.Size()
		default:
			return nil
		}
		out = append(out, e)
		return nil
	})
	return out, bytes, err
}

// Differences lists, one line each, how now differs from o.
func (o *Outside) Differences(now *Outside) []string {
	var out []string
	if !slices.Equal(o.Paths, now.Paths) {
		out = append(out, fmt.Sprintf("the data outside the repository is [%s], but prepare recorded [%s]",
			strings.Join(now.Paths, ", "), strings.Join(o.Paths, ", ")))
	}
	old := map[string]CarriedEntry{}
	for _, e := range o.Files {
		old[e.Path] = e
	}
	for _, e := range now.Files {
		was, ok := old[e.Path]
		delete(old, e.Path)
		switch {
		case !ok:
			out = append(out, e.Path+" added since prepare recorded it")
		case was.Size != e.Size || was.MTime != e.MTime:
			out = append(out, fmt.Sprintf("%s changed since prepare recorded it (size %d → %d, modified %s → %s)", e.Path, was.Size, e.Size, was.MTime, e.MTime))
		default:
			if d := entryChange(was, e); d != "" {
				out = append(out, fmt.Sprintf("%s changed since prepare recorded it (%s)", e.Path, d))
			}
		}
	}
	for p := range old {
		out = append(out, p+" removed since prepare recorded it")
	}
	slices.Sort(out)
	return out
}
