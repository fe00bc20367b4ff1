package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/fsafe"

	"github.com/hgate/hgate/config"
)

// TestSkillFrontMatter: each front matter field Claude Code documents is checked for its
// kind of value, an unknown field is refused, and the message names the field.
func TestSkillFrontMatter(t *testing.T) {
	tests := []struct{ fm, problem string }{
		{"name: finder\ndescription: Find symbols.", ""},
		{"name: finder\ndescription: d\nallowed-tools: Read Grep Bash(git diff *)\ncontext: fork\nagent: Explore\nmodel: haiku\neffort: high\n" +
			"disable-model-invocation: false\nuser-invocable: true\nargument-hint: \"[file]\"\nwhen_to_use: when lost\npaths: [\"src/**\"]\nshell: bash\n" +
			"hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks: [{type: command, command: ./check.sh}]\ndisallowed-tools: [AskUserQuestion]\narguments: [file]", ""},
		{"name: finder\ndescription: d\nversion: 1.0.0", `front matter field "version" is not one Claude Code documents`},
		{"name: finder\ndescription: d\ncontext: isolated", `front matter field "context": isolated is not one of fork`},
		{"name: finder\ndescription: d\nuser-invocable: \"no\"", `front matter field "user-invocable": not true or false`},
		{"name: finder\ndescription: d\nhooks: [a]", `front matter field "hooks": not a mapping`},
		{"name: finder\ndescription: d\nallowed-tools: {Read: 1}", `front matter field "allowed-tools": not text or a list of text`},
		{"name: finder\ndescription: d\neffort: extreme", `front matter field "effort": extreme is not one of low, medium, high, xhigh, max`},
		{"name: Finder Tool\ndescription: d", `front matter field "name": "Finder Tool" is not a skill name`},
		{"name: finder", "front matter has no description"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\n"+tt.fm+"\n---\nBody.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		root, err := fsafe.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, problem := readSkill(root, ".")
		root.Close()
		if tt.problem == "" && problem != "" || !strings.Contains(problem, tt.problem) {
			t.Errorf("%q: problem %q, want %q", tt.fm, problem, tt.problem)
		}
	}
}

// TestCodexSkill: codex's form keeps name, description and the body, and nothing else.
func TestCodexSkill(t *testing.T) {
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "finder", "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	skill := "---\nname: finder\ndescription: \"Find: symbols, \\\"quoted\\\"\"\nallowed-tools: Read\ncontext: fork\n---\nRun `grep -rn` first.\n"
	os.WriteFile(filepath.Join(src, "finder", "SKILL.md"), []byte(skill), 0o644)
	os.WriteFile(filepath.Join(src, "finder", "scripts", "run.sh"), []byte("echo\n"), 0o644)
	dst := filepath.Join(t.TempDir(), ".agents", "skills")
	if err := WriteCodexSkills(src, dst); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dst, "finder", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	fm, body, err := config.FrontMatterFields(data)
	if err != nil || len(fm) != 2 || fm["name"] != "finder" || fm["description"] != `Find: symbols, "quoted"` || string(body) != "Run `grep -rn` first.\n" {
		t.Fatalf("codex's SKILL.md:\n%s\n%v %q %v", data, fm, body, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "finder", "scripts", "run.sh")); err != nil {
		t.Fatal(err)
	}
}
