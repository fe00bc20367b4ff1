//go:build !unix

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// replaceWith runs path with args (args[0] the program's name) as a child with this
// process's stdio and environment, where a process cannot exec another in its place,
// and exits with its exit code as exec would have.
func replaceWith(ctx context.Context, path string, args []string) error {
	cmd := exec.Command(path, args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err == nil || errors.As(err, &exit) {
		os.Exit(cmd.ProcessState.ExitCode()) // in place of the process exec would have replaced
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("run %s: %v", path, err)
}
