package gitguard

import "github.com/hgate/hgate/gitguard/internal/objstore"

// The one tree-mode spelling, under the name the package's own tests use.
var modeText = objstore.ModeText

// SetRestoreWritten installs a hook that runs after the restore wrote a file.
func SetRestoreWritten(f func(p string)) { restoreWritten = f }

// WaitPreload waits until p has read its index.
func WaitPreload(p *IndexPreload) { <-p.done }
