package harness

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseManifest(t *testing.T) {
	tests := []struct {
		name     string
		json     string
		selfTest []string
		times    [3]time.Duration // startup, tool, self-test
		cwd      string
		problem  string
	}{
		{name: "defaults", json: `{"command": "python", "args": ["server.py"]}`,
			times: [3]time.Duration{10 * time.Second, 60 * time.Second, 20 * time.Second}},
		{name: "self_test true, top-level seconds", json: `{"command": "python", "args": ["s.py"], "self_test": true, "startup_timeout_sec": 3, "tool_timeout_sec": 7, "test_timeout_sec": 9}`,
			selfTest: []string{"python", "s.py", "--self-test"}, times: [3]time.Duration{3 * time.Second, 7 * time.Second, 9 * time.Second}},
		{name: "HarnessGym's timeouts object in ms", json: `{"command": "node", "self_test": ["node", "t.js"], "timeouts": {"initialize_ms": 500, "tool_call_ms": 2500, "self_test_ms": 4000}}`,
			selfTest: []string{"node", "t.js"}, times: [3]time.Duration{time.Second, 2500 * time.Millisecond, 4 * time.Second}},
		{name: "timeouts object in seconds, a shell string", json: `{"command": "x", "self_test": "sh -c 'echo \"ok now\"' --flag", "timeouts": {"startup_seconds": 2, "tool_seconds": 3, "self_test_seconds": 4}}`,
			selfTest: []string{"sh", "-c", `echo "ok now"`, "--flag"}, times: [3]time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second}},
		{name: "self_test object", json: `{"command": "x", "cwd": "tools/./srv", "self_test": {"command": "make", "args": ["test"], "timeout_ms": 30000}}`,
			selfTest: []string{"make", "test"}, times: [3]time.Duration{10 * time.Second, 60 * time.Second, 30 * time.Second}, cwd: "tools/srv"},
		{name: "absolute cwd is the root", json: `{"command": "x", "cwd": "/home/agent/repo", "self_test": false}`,
			times: [3]time.Duration{10 * time.Second, 60 * time.Second, 20 * time.Second}},
		{name: "broken", json: `{"args": "s.py", "cwd": "../up", "self_test": 3}`,
			times:   [3]time.Duration{10 * time.Second, 60 * time.Second, 20 * time.Second},
			problem: `command: missing or not a string (expected the program that starts the server); args: not a list of strings; cwd: "../up" leaves the repository (expected a folder inside it); self_test: not true, a list, a string or an object`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, problem := parseManifest([]byte(tc.json))
			if problem != tc.problem {
				t.Fatalf("problem %q, want %q", problem, tc.problem)
			}
			if !reflect.DeepEqual(m.SelfTest, tc.selfTest) {
				t.Errorf("self_test %q, want %q", m.SelfTest, tc.selfTest)
			}
			if got := [3]time.Duration{m.Startup, m.Tool, m.SelfTestTime}; got != tc.times {
				t.Errorf("timeouts %v, want %v", got, tc.times)
			}
			if m.Cwd != tc.cwd {
				t.Errorf("cwd %q, want %q", m.Cwd, tc.cwd)
			}
		})
	}
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"skills/grep-fast/SKILL.md":       "---\nname: grep-fast\ndescription: >\n  Search the repo quickly.\n---\n# Use\n",
		"skills/no-desc/SKILL.md":         "---\nname: no-desc\n---\nbody\n",
		"skills/no-file/README.md":        "x",
		"mcp/lookup/server.json":          `{"name": "look up", "command": "python", "args": ["server.py"], "self_test": true}`,
		"mcp/empty/notes.txt":             "",
		"mcp/twin/mcp.json":               `{"name": "look up", "command": "x"}`,
		"mcp/garbage/harnessgym-mcp.json": "{not json",
	})
	got, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, a := range got {
		lines = append(lines, a.Kind+" "+a.Name+" "+a.Path+" | "+a.Problem)
	}
	want := []string{
		"mcp empty mcp/empty | no manifest (expected mcp.json, server.json or harnessgym-mcp.json)",
		"mcp garbage mcp/garbage | harnessgym-mcp.json: not a JSON object: invalid character 'n' looking for beginning of object key string",
		"mcp look_up mcp/lookup | ",
		"mcp look_up mcp/twin | the name look_up is mcp/lookup's already",
		"skill grep-fast skills/grep-fast | ",
		"skill no-desc skills/no-desc | SKILL.md: front matter has no description (expected name: and description:)",
		"skill no-file skills/no-file | SKILL.md is missing",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got[4].Skill.Description != "Search the repo quickly." {
		t.Errorf("description %q", got[4].Skill.Description)
	}
	if none, err := Load(filepath.Join(dir, "absent")); err != nil || len(none) != 0 {
		t.Errorf("absent folder: %v, %v", none, err)
	}
}

// TestJudge: an unchanged folder whose artifacts are all qualified is settled; one with a
// quarantined artifact, unchanged, is judged again; a change is a change.
func TestJudge(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, s string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("skills/a/SKILL.md", "---\nname: a\ndescription: d\n---\n")
	write("skills/b/SKILL.md", "---\nname: b\ndescription: d\n---\n")
	ca, _ := ContentHash(dir, "skills/a")
	cb, _ := ContentHash(dir, "skills/b")
	reg := &Registry{Artifacts: []Entry{{Path: "skills/a", Status: Qualified, Content: ca}, {Path: "skills/b", Status: Quarantined, Content: cb}}}
	if got, err := reg.Judge(dir); err != nil || got != Retest {
		t.Fatalf("one quarantined, unchanged: %d %v, want Retest", got, err)
	}
	if u := reg.Unchanged(dir); u["skills/a"] != ca || u["skills/b"] != cb {
		t.Fatalf("Unchanged: %v", u)
	}
	reg.Artifacts[1].Status = Qualified
	if got, _ := reg.Judge(dir); got != Settled {
		t.Fatalf("all qualified, unchanged: %d, want Settled", got)
	}
	write("skills/b/SKILL.md", "---\nname: b\ndescription: e\n---\n")
	if got, _ := reg.Judge(dir); got != Changed {
		t.Fatalf("changed: %d, want Changed", got)
	}
	if u := reg.Unchanged(dir); len(u) != 1 {
		t.Fatalf("Unchanged after a change: %v", u)
	}
}
