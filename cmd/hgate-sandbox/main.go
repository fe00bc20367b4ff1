// Command hgate-sandbox is the shim every sandboxed command starts through (README,
// "Install"): the same code hgate runs when re-run as hgate-sandbox, in a binary that
// links only internal/sandbox, so that each task does not pay hgate's whole package
// initialisation twice (the shim outside the sandbox and its sandboxed leader).
package main

import (
	"fmt"
	"os"

	"github.com/hgate/hgate/internal/sandbox"
)

func main() {
	sandbox.Main() // never returns when started by hgate (argv[0] "hgate-sandbox")
	fmt.Fprintln(os.Stderr, "hgate-sandbox: hgate's sandbox shim, started by hgate for each sandboxed command; not a command to run by hand")
	os.Exit(2)
}
