package mcpserver

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/hgate/hgate/internal/proc"
)

const usage = `Usage: hgate-mcp [-C DIR] [--config FILE]

Serves hgate's bench, gate, guard and status as MCP tools on stdin and stdout; each
tool runs "hgate [-C DIR] [--config FILE] TOOL ... --json", with the hgate found next
to hgate-mcp, else on PATH. "hgate mcp" starts it: run that (docs/guide/harness.md).
`

// Main is hgate-mcp's main: it parses args (without the program name), serves until
// the client closes stdin or a signal arrives, and returns the exit code.
func Main(args []string) int {
	if len(args) > 0 && args[0] == "smoke" {
		return Smoke(args[1:], os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == "proxy" {
		return Proxy(args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == "selftest" {
		return SelfTest(args[1:], os.Stdout, os.Stderr)
	}
	fs := flag.NewFlagSet("hgate-mcp", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("C", "", "run hgate as if started in DIR")
	fs.StringVar(dir, "directory", "", "run hgate as if started in DIR")
	config := fs.String("config", "", "path of hgate.yaml")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fmt.Print(usage)
			return exitOK
		}
		fmt.Fprintf(os.Stderr, "hgate-mcp: %v\n%s", err, usage)
		return exitCannot
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "hgate-mcp: unexpected argument %q\n%s", fs.Arg(0), usage)
		return exitCannot
	}
	hgate, err := proc.Sibling("hgate")
	if err != nil {
		fmt.Fprintf(os.Stderr, "hgate-mcp: %v: install both with go install ./cmd/... in hgate's source\n", err)
		return exitCannot
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := Serve(ctx, version(), Child(hgate, *dir, *config)); err != nil && ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "hgate-mcp: %v\n", err)
		return exitCannot
	}
	return exitOK
}

// version is what the server tells clients: the module version go build stamped, else
// the VCS revision, else "devel" (hgate --version says more).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return "devel"
}
