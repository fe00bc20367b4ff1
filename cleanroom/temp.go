package cleanroom

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/scratch"
)

// TempDir makes a private temporary folder (a clean room, the baseline's traces) with a
// random name and mode 0700, inside a folder of this process that is just as random, so
// nothing can guess where a room will be and wait for it there. An empty marker folder
// in it names the repository (by hash): the first call of a process removes what a
// killed hgate left behind for the same repository (the repository lock keeps runs
// apart). Closing a room removes the process's folder once it holds nothing else.
func (rs *Rooms) TempDir(prefix string) (string, error) {
	marker := ownerMarker(rs.Repo.Root())
	if !rs.swept {
		sweep(os.TempDir(), marker)
		rs.swept = true
	}
	if rs.tmpParent == "" {
		parent, err := scratch.MkdirTemp("", "hgate-")
		if err != nil {
			return "", err
		}
		if err := os.Mkdir(filepath.Join(parent, marker), 0o700); err != nil {
			os.RemoveAll(parent)
			return "", err
		}
		rs.tmpParent = parent
	}
	return os.MkdirTemp(rs.tmpParent, prefix)
}

// releaseTemp removes this process's temporary folder when only its marker is left.
func (rs *Rooms) releaseTemp() {
	if rs.tmpParent == "" {
		return
	}
	entries, err := os.ReadDir(rs.tmpParent)
	if err == nil && len(entries) == 1 && entries[0].Name() == ownerMarker(rs.Repo.Root()) {
		benchmark.RemoveAll(rs.tmpParent)
		rs.tmpParent = ""
	}
}

// ownerMarker names the folder that marks a temporary folder as serving root.
func ownerMarker(root string) string {
	sum := sha256.Sum256([]byte(root))
	return "owner-" + hex.EncodeToString(sum[:8])
}

// sweep removes the temporary folders of earlier runs that hold marker: those whose
// maker is provably gone (scratch.Orphaned), never a running hgate's, and those of an
// hgate from before folders named their maker.
func sweep(tmp, marker string) {
	matches, _ := filepath.Glob(filepath.Join(tmp, "hgate-*"))
	for _, dir := range matches {
		if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
			continue
		}
		if fi, err := os.Lstat(filepath.Join(dir, marker)); err != nil || !fi.IsDir() {
			continue
		}
		name := filepath.Base(dir)
		if _, _, tagged := proc.ParseTag(strings.TrimPrefix(name, "hgate-")); !tagged || scratch.Orphaned(name, "hgate-") {
			scratch.RemoveAll(dir)
		}
	}
}
