// Command hgate gates a coding agent's edits with a benchmark: only changes that pass are kept.
package main

import (
	"context"
	"os"

	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/sandbox/ruleset"
)

func main() {
	sandbox.Main(ruleset.Restrict) // a wrapped benchmark task or agent starts here, as its sandbox shim (when hgate-sandbox is not beside hgate)
	// run catches SIGINT and SIGTERM for the commands that stop cleanly on them.
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}
