package mcpserver

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestProxyBothEras: the proxy carries either era of MCP's stdio transport — a server of
// the 2026-07-28 specification only (server/discover, stateless requests) and a legacy one
// (initialize only) — between the SDK's client and the server, and logs the tools/call.
func TestProxyBothEras(t *testing.T) {
	for _, tc := range []struct{ script, tool, protocol string }{
		{"modern_only.sh", "new", "2026-07-28"},
		{"initialize_only.sh", "old", "2025-06-18"},
	} {
		t.Run(tc.script, func(t *testing.T) {
			script, err := filepath.Abs(filepath.Join("testdata", tc.script))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			log := filepath.Join(dir, "calls.jsonl")
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan int)
			go func() {
				done <- Proxy([]string{"--server", "s", "--log", log, "--cwd", dir, "--", "sh", script}, inR, outW, io.Discard)
				outW.Close()
			}()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != tc.protocol {
				t.Errorf("protocol %s, want %s", got, tc.protocol)
			}
			list, err := cs.ListTools(ctx, nil)
			if err != nil || len(list.Tools) != 1 || list.Tools[0].Name != tc.tool {
				t.Fatalf("tools/list through the proxy: %+v %v", list, err)
			}
			_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool}) // the test servers answer it with an error
			cs.Close()
			<-done
			data, _ := os.ReadFile(log)
			if !strings.Contains(string(data), `"tool":"`+tc.tool+`"`) {
				t.Errorf("the call was not logged: %s", data)
			}
		})
	}
}
