package harness

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

type files map[string][]byte

func (f files) FilesAt(plumbing.Hash) (map[string][]byte, error) { return f, nil }

// TestMaterialize: the ref's harness/ files, and nothing else, land read-only in the
// folder, whose artifacts then hash as the registry recorded them.
func TestMaterialize(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mat")
	f := files{"harness/mcp/s/server.sh": []byte("echo hi\n"), "harness/mcp/s/mcp.json": []byte(`{"command":"sh"}`), "qualification.json": []byte("{}")}
	reg := &Registry{Commit: "0123456789012345678901234567890123456789"}
	for range 2 { // the second replaces the first, read-only as it is
		if err := Materialize(f, reg, dir); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "mcp", "s", "server.sh"))
	if err != nil || string(data) != "echo hi\n" {
		t.Fatalf("server.sh: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "qualification.json")); !os.IsNotExist(err) {
		t.Fatalf("the report was materialized: %v", err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "mcp", "s"), filepath.Join(dir, "mcp", "s", "server.sh")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o222 != 0 {
			t.Fatalf("%s is writable: %v %v", p, fi.Mode(), err)
		}
	}
	if err := Materialize(files{"harness/../x": []byte("x")}, reg, dir); err == nil {
		t.Fatal("a path out of the folder was written")
	}
	if err := Unseal(dir); err != nil {
		t.Fatal(err)
	}
}

// TestRelocate: paths into the harness folder, from the command, the arguments or the
// cwd, point into the materialized folder; the rest stays.
func TestRelocate(t *testing.T) {
	root, mat := "/r", "/m"
	tests := []struct {
		m        MCP
		cmd, cwd string
		args     []string
	}{
		{MCP{Command: "sh", Args: []string{".hgate/harness/mcp/s/server.sh", "--flag", "x"}}, "sh", "/r", []string{"/m/mcp/s/server.sh", "--flag", "x"}},
		{MCP{Command: "sh", Args: []string{"server.sh"}, Cwd: ".hgate/harness/mcp/s"}, "sh", "/m/mcp/s", []string{"server.sh"}},
		{MCP{Command: "./server", Args: []string{"../../../../src/main.go"}, Cwd: ".hgate/harness/mcp/s"}, "/m/mcp/s/server", "/m/mcp/s", []string{"/r/src/main.go"}},
		{MCP{Command: "/r/.hgate/harness/mcp/s/bin", Args: []string{"/etc/hosts"}}, "/m/mcp/s/bin", "/r", []string{"/etc/hosts"}},
		{MCP{Command: "python3", Args: []string{"tools/x.py"}, Cwd: "src"}, "python3", "/r/src", []string{"tools/x.py"}},
	}
	for _, tt := range tests {
		cmd, args, cwd := tt.m.Relocate(root, ".hgate/harness", mat)
		if cmd != tt.cmd || cwd != tt.cwd || !slices.Equal(args, tt.args) {
			t.Errorf("%+v: %s %v in %s, want %s %v in %s", tt.m, cmd, args, cwd, tt.cmd, tt.args, tt.cwd)
		}
	}
}
