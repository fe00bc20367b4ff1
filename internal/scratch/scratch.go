// Package scratch makes hgate's temporary folders — the clean rooms' parent, a gate's
// private traces (hgate-trace-), the loop's socket folder (hgate-loop-) and its agent's
// TMPDIR (hgate-agent-) — with their maker's pid and start time in the name
// (proc.Owner), and removes the ones whose maker is provably gone. A killed hgate runs no
// clean-up; the next one removes what it left, and never what a running hgate — another
// repository's, a reader's, a loop's — still uses, without a lock or a clock.
package scratch

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/internal/proc"
)

// Prefixes are the folders hgate makes in the temporary directory; Sweep looks for
// these.
var Prefixes = []string{"hgate-", "hgate-trace-", "hgate-loop-", "hgate-agent-"}

// MkdirTemp is os.MkdirTemp with this process named after prefix: PREFIX PID-TICKS-RANDOM.
func MkdirTemp(parent, prefix string) (string, error) {
	return os.MkdirTemp(parent, Prefix(prefix)+"*")
}

// Prefix is what MkdirTemp puts before the random part: prefix, then this process's
// proc.Owner, for a caller that makes the folder itself (the loop's socket).
func Prefix(prefix string) string { return prefix + proc.Self().Tag() + "-" }

// Orphaned reports whether name (a base name) is one MkdirTemp made with prefix for a
// process that is provably gone.
func Orphaned(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return false
	}
	o, _, ok := proc.ParseTag(rest)
	return ok && o.Gone()
}

// Sweep removes the folders in parent that MkdirTemp made, with one of Prefixes, for a
// process now gone, and returns their paths. What it cannot remove it leaves: a sweep
// is never a reason to stop.
func Sweep(parent string) []string {
	entries, _ := os.ReadDir(parent)
	var removed []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		for _, prefix := range Prefixes {
			if Orphaned(e.Name(), prefix) {
				p := filepath.Join(parent, e.Name())
				RemoveAll(p)
				removed = append(removed, p)
				break
			}
		}
	}
	return removed
}

// RemoveAll removes dir even where folders in it were made read-only (a clean room's
// carried folders, a Go module cache a task filled). Sandboxed processes wrote in it,
// so it goes by descriptor (fsafe): nothing in it is looked up by name, no link in it is
// followed, and a tree of any depth goes. What it cannot remove it leaves.
func RemoveAll(dir string) {
	// The parent is hgate's choice (the temporary directory, a room's parent), which may
	// be reached through a link (TMPDIR on a link): that link is the user's, not a task's.
	parent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil {
		return
	}
	root, err := fsafe.OpenRoot(parent)
	if err != nil {
		return
	}
	root.RemoveAll(filepath.Base(dir))
	root.Close()
}
