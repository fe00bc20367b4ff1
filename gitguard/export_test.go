package gitguard

import (
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard/internal/objstore"
)

// The library's object hash and the one tree-mode spelling, under the names the
// package's own tests use.
var (
	objectHash = plumbing.ComputeHash
	modeText   = objstore.ModeText
)

// SetRestoreWritten installs a hook that runs after the restore wrote a file.
func SetRestoreWritten(f func(p string)) { restoreWritten = f }
