//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0

// Command hgate-sandbox is the shim every sandboxed command starts through (README,
// "Install"): the same code hgate runs when re-run as hgate-sandbox, in a binary that
// links only internal/sandbox, so that each task does not pay hgate's whole package
// initialisation (once per task in namespaces, where the shim is the namespace's init and
// starts the command itself; twice without them: the shim outside the sandbox and its
// sandboxed leader).
//
// The go:debug lines keep the runtime's GOMAXPROCS from the cgroup's CPU limit: the shim
// needs no CPU of its own, and that default reads /proc/self/mountinfo and cgroup files at
// every start and polls them while the task runs (reads the sandbox denies anyway).
package main

import (
	"fmt"
	"os"

	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/sandbox/ruleset"
)

func main() {
	sandbox.Main(ruleset.Restrict) // never returns when started by hgate (argv[0] "hgate-sandbox")
	fmt.Fprintln(os.Stderr, "hgate-sandbox: hgate's sandbox shim, started by hgate for each sandboxed command; not a command to run by hand")
	os.Exit(2)
}
