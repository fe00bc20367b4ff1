//go:build !linux

package sandbox

import (
	"fmt"
	"runtime"
)

// Available reports the Landlock ABI the kernel offers, or an error saying why the sandbox cannot be had
// ("landlock is not enabled in this kernel", "not supported on darwin").
func Available() (int, error) {
	return 0, fmt.Errorf("not supported on %s", runtime.GOOS)
}

func reap(Policy, string, []string) int { return fail("not supported on " + runtime.GOOS) }

func applyAndExec(Policy, string, []string) int { return fail("not supported on " + runtime.GOOS) }
