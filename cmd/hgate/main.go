// Command hgate gates a coding agent's edits with a benchmark: only changes that pass are kept.
package main

import (
	"context"
	"os"

	"github.com/hgate/hgate/internal/sandbox"
)

func main() {
	sandbox.Main() // a wrapped benchmark task or agent starts here, as its sandbox shim
	// run catches SIGINT and SIGTERM for the commands that stop cleanly on them.
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
