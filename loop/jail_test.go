package loop

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestAgentWritable(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{
		".git/HEAD", "workspace/suite.json", "PROGRAM.md", "README.md", "agent/agent.sh", "agent/lib/x.sh",
		"bench/lib.sh", "tasks/t1/check.sh", "tasks/t1/PROGRAM.md", "prompts/a/b.txt", "prompts/c.md",
		"deps/score.py", "src/x.py", "src/deep/y.py", "src/deep/z.txt",
	} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../bench", filepath.Join(root, "agent", "link")); err != nil {
		t.Fatal(err)
	}
	abs := func(rels ...string) []string {
		var out []string
		for _, r := range rels {
			out = append(out, filepath.Join(root, filepath.FromSlash(r)))
		}
		return out
	}
	protected := abs(".git", "workspace", "deps")
	for _, c := range []struct {
		name  string
		allow []string
		want  []string
	}{
		// agent/ is granted whole; PROGRAM.md, slash-less, only where it exists.
		{"example", []string{"agent/agent.sh", "PROGRAM.md"}, abs("PROGRAM.md", "agent", "tasks/t1/PROGRAM.md")},
		{"folder", []string{"agent/"}, abs("agent")},
		{"glob inside a folder", []string{"prompts/*/*.txt"}, abs("prompts")},
		{"double star", []string{"**/*.py"}, abs("agent", "bench", "prompts", "src", "tasks")},
		{"no match", []string{"nothere/x"}, nil},
		{"slash-less glob", []string{"*.py"}, abs("src/deep/y.py", "src/x.py")},
		// A pattern that names a protected path opens nothing there.
		{"protected", []string{"workspace/", ".git/", "deps/score.py"}, nil},
		{"negation ignored", []string{"agent/", "!agent/lib/"}, abs("agent")},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := agentWritable(root, c.allow, protected)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("agentWritable(%q)\n got %q\nwant %q", c.allow, got, c.want)
			}
		})
	}
}

func TestMayMatchBelow(t *testing.T) {
	for _, c := range []struct {
		pattern, dir string
		want         bool
	}{
		{"agent/agent.sh", "agent", true},
		{"agent/agent.sh", "agentx", false},
		{"agent/agent.sh", "agent/sub", false},
		{"a/*/c", "a/b", true},
		{"a/*/c", "x/b", false},
		{"**/c", "anything/deep", true},
		{"a", "a/b/c", true},
		{"a/[", "a/b", true},
	} {
		if got := mayMatchBelow(c.pattern, c.dir); got != c.want {
			t.Errorf("mayMatchBelow(%q, %q) = %v, want %v", c.pattern, c.dir, got, c.want)
		}
	}
}

// TestHarnessDirRefusesSymlink: the harness folder reached through a symlink is never
// granted to the agent (the kernel would grant the link's target).
func TestHarnessDirRefusesSymlink(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	if dir, err := harnessDir(root, ".hgate/harness"); err != nil || dir != filepath.Join(root, ".hgate", "harness") {
		t.Fatalf("harnessDir: %q, %v", dir, err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "tools")); err != nil {
		t.Fatal(err)
	}
	if _, err := harnessDir(root, "tools/harness"); err == nil || !strings.Contains(err.Error(), "is not a folder") {
		t.Fatalf("a harness folder through a symlink: %v", err)
	}
}
