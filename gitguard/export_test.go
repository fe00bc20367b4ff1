package gitguard

import "github.com/go-git/go-git/v5/plumbing"

var objectHash = plumbing.ComputeHash

// SetRestoreWritten installs a hook that runs after the restore wrote a file.
func SetRestoreWritten(f func(p string)) { restoreWritten = f }
