package main

import (
	"context"
	"fmt"

	"github.com/hgate/hgate/internal/proc"
)

// mcpBinary is the MCP server's own binary. hgate mcp only starts it: the MCP SDK and
// what it brings (net/http, crypto/tls, JSON Schema) would cost every other hgate
// command about a millisecond and 6 MB to start (README, "MCP server").
const mcpBinary = "hgate-mcp"

// mcpCmd starts hgate-mcp in its place, so that stdin and stdout are the MCP stream.
type mcpCmd struct{}

func (c *mcpCmd) Help() string {
	return `Tools: bench (optional tasks), gate (optional fail_fast), guard and status. Each returns the command's text output, its --json object as structured content, and isError when the command exits 2 (could not answer); a rejection (exit 1) is an answer, not an error.

The server is the hgate-mcp binary, found next to hgate (symlinks resolved), else on PATH; go install ./cmd/... installs both. hgate mcp runs it in its own place with -C and --config; each tool runs hgate again (through the loop's socket inside the loop's sandbox). Exit 2 when hgate-mcp is missing.`
}

func (c *mcpCmd) Run(ctx context.Context, g *Globals) error {
	path, err := proc.Sibling(mcpBinary)
	if err != nil {
		return fmt.Errorf("%v: install it next to hgate with go install ./cmd/... in hgate's source (it installs both)", err)
	}
	args := []string{mcpBinary, "-C", g.Dir}
	if g.Config != "" {
		args = append(args, "--config", g.Config)
	}
	return replaceWith(ctx, path, args)
}
