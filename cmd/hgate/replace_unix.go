//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"syscall"
)

// replaceWith execs path with args (args[0] the program's name) in this process's
// place, environment and stdio unchanged; it returns only when that fails.
func replaceWith(_ context.Context, path string, args []string) error {
	err := syscall.Exec(path, args, os.Environ())
	return fmt.Errorf("exec %s: %v", path, err)
}
