package agentcli

import (
	"strings"
	"testing"
)

// TestResume: a repair's command line continues the session where the preset's CLI can:
// claude's --resume after -p, codex's resume subcommand after exec's own options (it
// takes no --sandbox of its own) and before the stdin prompt; other agents are left as
// they are.
func TestResume(t *testing.T) {
	for _, tc := range []struct {
		agent []string
		want  string
		ok    bool
	}{
		{[]string{"claude"}, "claude -p --resume S1 --output-format stream-json", true},
		{[]string{"codex"}, "codex exec --json --sandbox danger-full-access", true},
		{[]string{"aider"}, "aider --yes-always", false},
		{[]string{"sh bot.sh"}, "sh -c sh bot.sh", false},
		{[]string{"claude", "-p"}, "claude -p", false},
	} {
		cli := For(tc.agent)
		args := Command(cli, "prompt.txt")
		got, ok := Resume(cli, args, "S1")
		line := strings.Join(got, " ")
		if ok != tc.ok || !strings.HasPrefix(line, tc.want) {
			t.Errorf("Resume(%q) = %q %v, want %q… %v", tc.agent, line, ok, tc.want, tc.ok)
		}
		if tc.agent[0] == "codex" && !strings.HasSuffix(line, ` resume S1 -`) {
			t.Errorf("codex resumes as %q, want … resume S1 -", line)
		}
		if same, _ := Resume(cli, args, ""); strings.Join(same, " ") != strings.Join(args, " ") {
			t.Errorf("Resume(%q) with no session changed the command line: %q", tc.agent, same)
		}
	}
}
