//go:build !linux

package sandbox

import "github.com/hgate/hgate/internal/proc"

// Available reports the Landlock ABI the kernel offers, or an error saying why the sandbox cannot be had
// ("landlock is not enabled in this kernel", "not supported on darwin").
func Available() (int, error) {
	return 0, proc.ErrNotSupported
}

func reap(Policy, []string, string, []string) int { return fail(proc.ErrNotSupported.Error()) }

func applyAndExec(Policy, []string, string, []string) int { return fail(proc.ErrNotSupported.Error()) }
