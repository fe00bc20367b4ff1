//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpCall is a script's MCP client: "mcp-call TOOL [JSON-ARGS] -- COMMAND [ARG...]"
// starts COMMAND as an MCP server on its stdin and stdout (the way claude or codex
// start "hgate mcp"), calls TOOL and prints the tool's text, then "structured: " and
// its structured content, then "isError: true|false". Exit 0 when the call was
// answered (whatever isError says), 2 when it could not be made.
func mcpCall() {
	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "mcp-call: "+format+"\n", a...)
		os.Exit(2)
	}
	args := os.Args[1:]
	sep := 0
	for sep < len(args) && args[sep] != "--" {
		sep++
	}
	if sep == 0 || sep > 2 || sep+1 >= len(args) {
		fail("usage: mcp-call TOOL [JSON-ARGS] -- COMMAND [ARG...]")
	}
	var in map[string]any
	if sep == 2 {
		if err := json.Unmarshal([]byte(args[1]), &in); err != nil {
			fail("arguments %s: %v", args[1], err)
		}
	}
	ctx := context.Background()
	cmd := exec.Command(args[sep+1], args[sep+2:]...)
	cmd.Stderr = os.Stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcp-call", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		fail("connect to %s: %v", args[sep+1], err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: args[0], Arguments: in})
	if err != nil {
		fail("%s: %v", args[0], err)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			fmt.Print(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		fmt.Printf("structured: %s\n", data)
	}
	fmt.Printf("isError: %v\n", res.IsError)
	if err := cs.Close(); err != nil {
		fail("close: %v", err)
	}
	os.Exit(0)
}
