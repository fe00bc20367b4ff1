package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/gate"
)

// mcpCmd serves hgate's agent-facing commands as MCP tools on stdio. Inside the
// loop's sandbox (HGATE_LOOP_SOCKET set) each tool goes through the loop's
// socket, as the CLI does; elsewhere it runs here, against -C's repository.
type mcpCmd struct{}

func (c *mcpCmd) Help() string {
	return `Tools: bench (optional tasks), gate (optional fail_fast), guard and status. Each returns the command's text output, its --json object as structured content, and isError when the command exits 2 (could not answer); a rejection (exit 1) is an answer, not an error.`
}

func (c *mcpCmd) Run(ctx context.Context, g *Globals) error {
	return newMCPServer(g.execFor()).Run(ctx, &mcp.StdioTransport{})
}

// execFunc runs "hgate ARGS..." and returns its exit code.
type execFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// execFor is how hgate mcp runs a command: through the loop's socket when there is
// one, else in this process against the repository of -C (and --config).
func (g *Globals) execFor() execFunc {
	if socket := os.Getenv(agentapi.EnvSocket); socket != "" {
		return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			code, err := agentapi.Call(ctx, socket, args, stdout, stderr)
			if err != nil {
				fmt.Fprintf(stderr, "hgate: %v\n", err)
			}
			return code
		}
	}
	pre := []string{"-C", g.Dir}
	if g.Config != "" {
		pre = append(pre, "--config", g.Config)
	}
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return run(ctx, append(slices.Clone(pre), args...), stdout, stderr)
	}
}

type benchInput struct {
	Tasks []string `json:"tasks,omitempty" jsonschema:"train task ids to run; default: every train task"`
}

type gateInput struct {
	FailFast bool `json:"fail_fast,omitempty" jsonschema:"stop outstanding tasks as soon as a rejection is certain"`
}

type noInput struct{}

// newMCPServer builds the MCP server with hgate's four tools, each running
// through exec.
func newMCPServer(exec execFunc) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "hgate", Version: version()}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "bench", Description: "Run train tasks (all, or the ones named) for failure analysis; their traces go to traces/latest. Does not decide anything."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in benchInput) (*mcp.CallToolResult, any, error) {
			args := []string{"bench", "--json"}
			for _, id := range in.Tasks {
				args = append(args, "--tasks="+id)
			}
			return toolResult(ctx, exec, args, writeBench)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "gate", Description: "Decide whether the current change is kept: file guard, regression suite, held-out score. Passed (exit 0) means the loop will keep it; rejected (exit 1) lists the reasons."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in gateInput) (*mcp.CallToolResult, any, error) {
			args := []string{"gate", "--json"}
			if in.FailFast {
				args = append(args, "--fail-fast")
			}
			return toolResult(ctx, exec, args, (*gate.Report).WriteText)
		})
	mcp.AddTool(s, &mcp.Tool{Name: "guard", Description: "Check that only paths allow names changed (the gate's Step 0), without running any task; lists each other path with how to revert it."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
			return toolResult(ctx, exec, []string{"guard", "--json"}, func(v *guardJSON, w io.Writer) { writeGuardText(w, v.Violations) })
		})
	mcp.AddTool(s, &mcp.Tool{Name: "status", Description: "What the agent may know: the best val_score so far, the regression suite's size, the allowlist, and in a loop the iteration and run id."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ noInput) (*mcp.CallToolResult, any, error) {
			return toolResult(ctx, exec, []string{"status", "--json"}, (*agentapi.Status).WriteText)
		})
	return s
}

// toolResult runs a command with --json and answers with its text (rendered from
// the JSON as the command prints it without --json), its diagnostics, and the
// JSON object as structured content. Exit 2 or worse is a tool error. write renders
// the JSON, decoded as a T.
func toolResult[T any](ctx context.Context, exec execFunc, args []string, write func(v *T, w io.Writer)) (*mcp.CallToolResult, any, error) {
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
		fmt.Fprintf(&text, "hgate %s: exit status %d (%s)\n", args[0], code, exitMeaning(code))
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}, IsError: code >= exitCannot}
	return res, structured, nil
}

func exitMeaning(code int) string {
	switch code {
	case exitNo:
		return "the answer is no"
	case exitInterrupted:
		return "interrupted"
	}
	return "could not answer"
}

func writeBench(v *gate.BenchJSON, w io.Writer) {
	ids := make([]string, 0, len(v.Results))
	for id := range v.Results {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	width := idWidth(ids)
	for _, id := range ids {
		r := v.Results[id]
		fmt.Fprintln(w, benchLine(id, width, r.Passed, r.Reward, r.Reason))
	}
	fmt.Fprintf(w, "%d/%d train tasks passed\n", v.Passed, v.Total)
}
