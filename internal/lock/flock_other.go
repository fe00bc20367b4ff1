//go:build !unix

package lock

import (
	"os"

	"github.com/hgate/hgate/internal/platform"
)

// openLockFile fails: the lock needs flock(2), so the commands that take it
// (gate, record, prepare, bench, loop) do not run here.
func openLockFile(string) (*os.File, error) { return nil, platform.ErrUnsupported }

func tryLock(*os.File) (bool, error) { return false, platform.ErrUnsupported }

func unlock(*os.File) error { return platform.ErrUnsupported }

func alive(int) bool { return false }
