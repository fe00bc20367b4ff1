//go:build unix && !linux

package main

import (
	"fmt"
	"os"
)

// ptyhold is Linux's (see ptyhold_linux_test.go): its scripts skip elsewhere.
func ptyhold() {
	fmt.Fprintln(os.Stderr, "ptyhold: Linux only")
	os.Exit(2)
}
