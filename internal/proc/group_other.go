//go:build !unix

package proc

import (
	"context"
	"fmt"
	"os/exec"
)

// Start needs process groups, which this platform does not have.
func Start(cmd *exec.Cmd, opts Options) (*Process, error) {
	return nil, fmt.Errorf("run %s in its own process group: %w", cmd.Path, ErrNotSupported)
}

// Wait is never reached: Start fails here.
func (p *Process) Wait(ctx context.Context) Result {
	return Result{Err: fmt.Errorf("wait: %w", ErrNotSupported)}
}

// KillGroup needs process groups.
func KillGroup(pgid int) error { return ErrNotSupported }

// Kill needs signals.
func Kill(pid int) error { return ErrNotSupported }
