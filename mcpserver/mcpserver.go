// Package mcpserver is hgate's MCP server: hgate's agent-facing commands (bench, gate,
// guard, status) as MCP tools, each run by the hgate binary as a child process. It is
// hgate-mcp's, a binary of its own, so that the MCP SDK and what it brings (net/http,
// crypto/tls, JSON Schema) are not loaded by every hgate command (README, "MCP server").
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/answer"
)

// Exit codes of hgate (README, "Exit codes").
const (
	exitOK          = 0
	exitCannot      = 2
	exitInterrupted = 130
)

// Exec runs "hgate ARGS..." and returns its exit code.
type Exec func(ctx context.Context, args []string, stdout, stderr io.Writer) int

type benchInput struct {
	Tasks []string `json:"tasks,omitempty" jsonschema:"train task ids to run; default: every train task"`
}

type gateInput struct {
	FailFast bool `json:"fail_fast,omitempty" jsonschema:"stop outstanding tasks as soon as a rejection is certain"`
}

type noInput struct{}

// New builds the MCP server with hgate's four tools, each running through exec;
// version is what the server tells clients it is.
func New(version string, exec Exec) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hgate", Version: version}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "bench", Description: "Run train tasks (all, or the ones named) for failure analysis; their traces go to traces/latest. Does not decide anything."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in benchInput) (*mcp.CallToolResult, any, error) {
			args := []string{"bench", "--json"}
			for _, id := range in.Tasks {
				args = append(args, "--tasks="+id)
			}
			return toolResult(ctx, exec, args, (*answer.BenchJSON).WriteText)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "gate", Description: "Check the current change: file guard, regression suite, and which failing train tasks pass now. Inside hgate loop the held-out test split is scored by the loop after your turn, never while you run: the answer is pending (exit 0) when nothing rejects the change so far, rejected (exit 1) with the reasons; the loop's verdict comes in your next prompt. Outside the loop the held-out score is checked too, and passed (exit 0) means the change may be kept."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in gateInput) (*mcp.CallToolResult, any, error) {
			args := []string{"gate", "--json"}
			if in.FailFast {
				args = append(args, "--fail-fast")
			}
			return toolResult(ctx, exec, args, (*answer.Answer).WriteText)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "guard", Description: "Check that only paths allow names changed (the gate's Step 0), without running any task; lists each other path with how to revert it."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
			return toolResult(ctx, exec, []string{"guard", "--json"}, (*answer.GuardJSON).WriteText)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "status", Description: "What the agent may know: the best val_score so far, the regression suite's size, the allowlist, and in a loop the iteration and run id."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
			return toolResult(ctx, exec, []string{"status", "--json"}, (*agentapi.Status).WriteText)
		})
	return s
}

// Serve runs the server on stdin and stdout until the client goes away or ctx ends.
func Serve(ctx context.Context, version string, exec Exec) error {
	return New(version, exec).Run(ctx, &mcp.StdioTransport{})
}

// toolResult runs a command with --json and answers with its text (rendered from
// the JSON as the command prints it without --json), its diagnostics, and the
// JSON object as structured content. Exit 2 or worse is a tool error. write renders
// the JSON, decoded as a T.
func toolResult[T any](ctx context.Context, exec Exec, args []string, write func(v *T, w io.Writer)) (*mcp.CallToolResult, any, error) {
	var stdout, stderr bytes.Buffer
	code := exec(ctx, args, &stdout, &stderr)
	var text strings.Builder
	var structured any
	if obj := bytes.TrimSpace(stdout.Bytes()); len(obj) > 0 && json.Valid(obj) && obj[0] == '{' {
		structured = json.RawMessage(obj)
		if code >= exitCannot {
			// {"error": ..., "exit": N}: the message is on stderr, written below.
		} else if v := new(T); json.Unmarshal(obj, v) == nil {
			write(v, &text)
		} else {
			text.Write(obj) // the JSON itself is still the answer
			text.WriteByte('\n')
		}
	} else {
		text.Write(stdout.Bytes())
	}
	text.Write(stderr.Bytes())
	if code != exitOK {
		fmt.Fprintf(&text, "hgate %s: exit status %d (%s)\n", args[0], code, agentapi.ExitMeaning(code))
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}, IsError: code >= exitCannot}
	return res, structured, nil
}
