// Command hgate-mcp is hgate's MCP server, which "hgate mcp" starts: a binary of its
// own so that the MCP SDK's start-up cost is paid by it alone (README, "MCP server").
package main

import (
	"os"

	"github.com/hgate/hgate/mcpserver"
)

func main() {
	os.Exit(mcpserver.Main(os.Args[1:]))
}
