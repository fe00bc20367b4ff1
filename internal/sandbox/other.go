//go:build !linux

package sandbox

import "github.com/hgate/hgate/internal/platform"

// Available reports the Landlock ABI the kernel offers, or an error saying why the sandbox cannot be had
// ("landlock is not enabled in this kernel", "not supported on darwin").
func Available() (int, error) {
	return 0, platform.ErrUnsupported
}

func reap(Policy, string, []string) int { return fail(platform.ErrUnsupported.Error()) }

func applyAndExec(Policy, string, []string) int { return fail(platform.ErrUnsupported.Error()) }
