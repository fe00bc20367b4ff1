// Command hgate gates a coding agent's edits with a benchmark: only changes that pass are kept.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hgate/hgate/internal/sandbox"
)

func main() {
	sandbox.Main() // a wrapped benchmark task or agent starts here, as its sandbox shim
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
