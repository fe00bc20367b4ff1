package layers

import (
	"os/exec"
	"strings"
	"testing"
)

// TestHgateLeavesMCPOut: the hgate binary links neither the MCP SDK nor net/http,
// which hgate-mcp alone needs; with them every hgate command would start about a
// millisecond slower (README, "MCP server").
func TestHgateLeavesMCPOut(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot list the packages")
	}
	out, err := exec.Command("go", "list", "-deps", module+"cmd/hgate").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/modelcontextprotocol/") || dep == "net/http" {
			t.Errorf("cmd/hgate depends on %s: only cmd/hgate-mcp may (go list -deps shows which package brings it)", dep)
		}
	}
}
