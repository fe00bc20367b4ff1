package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// smokeTestServer is this test binary as an MCP server the agent might have built:
// "tools" lists one tool, "empty" none.
func smokeTestServer(kind string) int {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if kind == "tools" {
		type in struct {
			Q string `json:"q"`
		}
		mcp.AddTool(s, &mcp.Tool{Name: "lookup", Description: "looks up"}, func(context.Context, *mcp.CallToolRequest, in) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

func TestSmoke(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  string
		argv []string
		want smokeResult
	}{
		{name: "a server with a tool", env: "tools", argv: []string{self}, want: smokeResult{Reward: 1, Tools: []string{"lookup"}, Handshake: "server/discover", Protocol: "2026-07-28"}},
		{name: "a server with no tool", env: "empty", argv: []string{self}, want: smokeResult{Reward: 1, Tools: []string{}, Handshake: "server/discover", Protocol: "2026-07-28"}},
		// Hand-written servers of each era: one that speaks only the 2026-07-28
		// specification's stateless requests (no initialize), one only the legacy handshake.
		{name: "modern only", env: "sh", argv: []string{"sh", "testdata/modern_only.sh"}, want: smokeResult{Reward: 1, Tools: []string{"new"}, Handshake: "server/discover", Protocol: "2026-07-28"}},
		{name: "initialize only", env: "sh", argv: []string{"sh", "testdata/initialize_only.sh"}, want: smokeResult{Reward: 1, Tools: []string{"old"}, Handshake: "initialize", Protocol: "2025-06-18"}},
		{name: "Content-Length framing", argv: []string{"sh", "-c", `printf 'Content-Length: 40\r\n\r\n{"jsonrpc":"2.0","id":1,"result":{}}'; sleep 5`},
			want: smokeResult{Message: "server/discover or initialize: the server speaks Content-Length framing; MCP's stdio transport is newline-delimited JSON (one message a line)"}},
		{name: "silent", argv: []string{"sleep", "5"}, want: smokeResult{Message: "server/discover or initialize: no answer within 300ms"}},
		{name: "not a program", argv: []string{"/nonexistent/server"}, want: smokeResult{Message: "cannot start: fork/exec /nonexistent/server: no such file or directory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SMOKE_TEST_SERVER", tc.env)
			var stdout, stderr bytes.Buffer
			args := append([]string{"--startup-timeout", "300ms", "--tool-timeout", "5s", "--"}, tc.argv...)
			if tc.env != "" {
				args[1] = "20s" // a real server: let a loaded machine start it
			}
			if code := Smoke(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			var got smokeResult
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
				t.Fatalf("%v: %q", err, stdout.String())
			}
			want := tc.want
			if want.Tools == nil {
				want.Tools = []string{}
			}
			if got.Reward != want.Reward || strings.Join(got.Tools, ",") != strings.Join(want.Tools, ",") || got.Message != want.Message ||
				got.Handshake != want.Handshake || got.Protocol != want.Protocol {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

func TestSelfTest(t *testing.T) {
	tests := []struct {
		argv []string
		last string
	}{
		{[]string{"sh", "-c", "echo 0"}, `{"reward":1}`}, // its own output cannot pose as the result
		{[]string{"sh", "-c", "echo checking >&2; exit 3"}, `{"reward":0,"message":"exit status 3"}`},
		{[]string{"/nonexistent/test"}, `{"reward":0,"message":"cannot start: fork/exec /nonexistent/test: no such file or directory"}`},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		if code := SelfTest(append([]string{"--"}, tc.argv...), &stdout, &stderr); code != 0 {
			t.Fatalf("%q: exit %d", tc.argv, code)
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		if got := lines[len(lines)-1]; got != tc.last {
			t.Errorf("%q: last line %s, want %s", tc.argv, got, tc.last)
		}
	}
}
