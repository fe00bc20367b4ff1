package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/hgate/hgate/internal/statefile"
)

// Registry is harness.json, the workspace state file (kept by the ledger) that says which
// artifacts hgate qualified and which it quarantined: hgate's record, never the agent's.
type Registry struct {
	UpdatedAt string `json:"updated_at"`
	// Commit is the refs/hgate/harness commit that holds the artifacts as they were
	// qualified, with that qualification's report.
	Commit    string  `json:"commit"`
	Artifacts []Entry `json:"artifacts"`
}

// Entry is one artifact's standing.
type Entry struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Path    string `json:"path"`
	Status  string `json:"status"`  // qualified, quarantined
	Content string `json:"content"` // ContentHash of the artifact's folder when it was judged
	Reason  string `json:"reason,omitempty"`
	Report  string `json:"report"`
	// Judged is when this content was qualified or quarantined.
	Judged string `json:"judged"`
}

// Statuses of an Entry.
const (
	Qualified   = "qualified"
	Quarantined = "quarantined"
)

// ParseRegistry reads harness.json strictly.
func ParseRegistry(file string, data []byte) (*Registry, error) {
	var r Registry
	if err := statefile.DecodeJSON(file, data, &r); err != nil {
		return nil, err
	}
	for i, e := range r.Artifacts {
		if e.Status != Qualified && e.Status != Quarantined {
			return nil, fmt.Errorf("%s: artifacts[%d].status: %q is not qualified or quarantined", file, i, e.Status)
		}
	}
	return &r, nil
}

// Marshal renders harness.json.
func (r *Registry) Marshal() ([]byte, error) { return statefile.EncodeJSON(r) }

// Find returns the entry of the artifact at path, if any.
func (r *Registry) Find(path string) (Entry, bool) {
	if r != nil {
		for _, e := range r.Artifacts {
			if e.Path == path {
				return e, true
			}
		}
	}
	return Entry{}, false
}

// ContentHash is a digest of an artifact folder: each regular file's slash path and
// content, each symlink's path and target, in path order. Any change to the folder
// changes it, so a changed artifact is judged again.
func ContentHash(dir string) (string, error) {
	type item struct{ path, digest string }
	var items []item
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			items = append(items, item{rel, "link " + target})
		case t.IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			items = append(items, item{rel, "file " + hex.EncodeToString(sum[:])})
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Slice(items, func(i, j int) bool { return items[i].path < items[j].path })
	h := sha256.New()
	for _, it := range items {
		fmt.Fprintf(h, "%s\x00%s\n", it.path, it.digest)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
