package agentcli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCodexHome: codex's activation home links every entry of the user's (the login,
// the config, the sessions) and each of the user's skills, holds the active skills in
// skills/hgate-harness/, and the codex preset's command gets it as CODEX_HOME; the user's
// codex home is left as it was.
func TestCodexHome(t *testing.T) {
	user, act := t.TempDir(), t.TempDir()
	t.Setenv("CODEX_HOME", user)
	write := func(p, data string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{
		"auth.json": `{"OPENAI_API_KEY":"sk"}`, "config.toml": "model = \"gpt-5\"\n", "sessions/2026/r.jsonl": "{}\n",
		"skills/mine/SKILL.md": "---\nname: mine\ndescription: the user's\n---\n",
	} {
		write(filepath.Join(user, name), data)
	}
	write(filepath.Join(act, "skills", "finder", "SKILL.md"), "---\nname: finder\ndescription: built by the agent\n---\n")
	before := tree(t, user)
	tools := Tools{SkillsDir: filepath.Join(act, "skills")}
	got, err := Codex{}.Activate(act, tools)
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(act, "codex-home")
	if got != home {
		t.Fatalf("codex home %q, want %q", got, home)
	}
	tools.Home = got
	for _, name := range []string{"auth.json", "config.toml", "sessions", "skills/mine"} {
		if to, err := os.Readlink(filepath.Join(home, name)); err != nil || to != filepath.Join(user, name) {
			t.Errorf("%s links to %q (%v), want the user's", name, to, err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(home, "skills", "hgate-harness", "finder", "SKILL.md")); err != nil || !strings.Contains(string(data), "built by the agent") {
		t.Errorf("the active skill: %v %q", err, data)
	}
	if after := tree(t, user); !slices.Equal(before, after) {
		t.Errorf("the user's codex home changed: %v, was %v", after, before)
	}
	_, env := For([]string{"codex"}).Apply([]string{"codex", "exec", "-"}, tools)
	if !slices.Contains(env, "CODEX_HOME="+home) {
		t.Errorf("codex's environment: %v", env)
	}
	if _, env := For([]string{"claude"}).Apply([]string{"claude", "-p"}, tools); slices.ContainsFunc(env, func(e string) bool { return strings.HasPrefix(e, "CODEX_HOME=") }) {
		t.Errorf("claude given CODEX_HOME: %v", env)
	}
}

// tree lists a folder's paths.
func tree(t *testing.T, dir string) []string {
	var out []string
	if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		out = append(out, p)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
