//go:build !unix

package lock

import (
	"os"

	"github.com/hgate/hgate/internal/proc"
)

// openLockFile fails: the lock needs flock(2), so the commands that take it
// (gate, record, prepare, bench, loop) do not run here.
func openLockFile(string) (*os.File, error) { return nil, proc.ErrNotSupported }

func tryLock(*os.File) (bool, error) { return false, proc.ErrNotSupported }

func unlock(*os.File) error { return proc.ErrNotSupported }

func alive(int) bool { return false }
