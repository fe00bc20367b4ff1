package agentcli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/modelstub"
)

// TestCodexSeesSkills: the real codex, run with the environment and command line its
// activation gives (Activate's home as CODEX_HOME, Apply's arguments), against a
// loopback stand-in of its model API, lists the active skill to the model — its name,
// its description and the file codex read — and that file's front matter is codex's form
// (name and description only, a Claude Code field dropped); a skill's script keeps its
// executable bit. The user's own codex skill stays listed too.
func TestCodexSeesSkills(t *testing.T) {
	modelstub.NeedCLI(t, "codex")
	home, dir, user := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", user)
	writeSkill(t, filepath.Join(user, "skills", "mine"), "---\nname: mine\ndescription: The user's own skill.\n---\nx\n")
	skills := filepath.Join(dir, "skills")
	writeSkill(t, filepath.Join(skills, "symbolfinder"),
		"---\nname: symbolfinder\ndescription: Find where a symbol is defined before editing.\ncontext: fork\nallowed-tools: Bash\n---\nRun find.sh first.\n")
	if err := os.WriteFile(filepath.Join(skills, "symbolfinder", "find.sh"), []byte("#!/bin/sh\ngrep -rn \"$1\" .\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tools := Tools{SkillsDir: skills}
	codexHome, err := Codex{}.Activate(dir, tools)
	if err != nil {
		t.Fatal(err)
	}
	tools.Home = codexHome
	stub := modelstub.OpenAI(t, modelstub.Turn{Text: "done"})
	args, env := Codex{}.Apply(Codex{}.Args(), tools)
	args = slices.Insert(args, 2, append(modelstub.CodexProvider(stub.URL, "HGATE_STUB_KEY"), "--skip-git-repo-check")...)
	for i := 0; i+1 < len(args); i++ { // hgate's own server: hgate is not on PATH here
		if args[i] == "-c" && strings.HasPrefix(args[i+1], "mcp_servers.hgate.") {
			args = slices.Delete(args, i, i+2)
			i--
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), append(env, "HGATE_STUB_KEY=sk-stub")...)
	cmd.Dir, cmd.Stdin = t.TempDir(), strings.NewReader("hi")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	main := stub.Main()
	if len(main) == 0 {
		t.Fatal("codex sent the model nothing")
	}
	sys := main[0].System
	for _, want := range []string{"- symbolfinder: Find where a symbol is defined before editing. (file: ", "- mine: The user's own skill."} {
		if !strings.Contains(sys, want) {
			t.Errorf("codex's instructions to the model do not list %q:\n%.4000s", want, sys)
		}
	}
	placed := filepath.Join(codexHome, "skills", "hgate-harness", "symbolfinder")
	data, err := os.ReadFile(filepath.Join(placed, "SKILL.md"))
	if err != nil || string(data) != "---\nname: \"symbolfinder\"\ndescription: \"Find where a symbol is defined before editing.\"\n---\nRun find.sh first.\n" {
		t.Errorf("the SKILL.md codex read: %v\n%s", err, data)
	}
	if info, err := os.Stat(filepath.Join(placed, "find.sh")); err != nil || info.Mode().Perm()&0o100 == 0 {
		t.Errorf("the skill's script as codex got it: %v %v", info, err)
	}
}

func writeSkill(t *testing.T, dir, text string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
