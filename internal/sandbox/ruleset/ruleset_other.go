//go:build !linux

package ruleset

import (
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
)

// Restrict fails: Landlock is Linux's, and no sandbox is had elsewhere (see sandbox.Available).
func Restrict(sandbox.Policy) error { return proc.ErrNotSupported }
