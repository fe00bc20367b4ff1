package modelstub

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/agentout"
)

var update = flag.Bool("update", false, "rewrite agentout's fixtures of the real CLIs' output")

// cli runs one of the real CLIs in dir with the environment env, the prompt on stdin, and
// returns its stdout; it skips the test where the CLI is not installed.
func cli(t *testing.T, env []string, dir, prompt string, args ...string) string {
	return cliExit(t, 0, env, dir, prompt, args...)
}

// cliExit is cli for a CLI that exits with code.
func cliExit(t *testing.T, code int, env []string, dir, prompt string, args ...string) string {
	t.Helper()
	NeedCLI(t, args[0])
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(prompt)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if strings.Contains(stderr.String(), "native binary not installed") {
		t.Skipf("%s: the npm package's native binary is not in place (run its install.cjs)", args[0])
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != code {
		t.Fatalf("%s: %v (want exit status %d)\nstdout: %s\nstderr: %s", args[0], err, code, out, stderr.String())
	}
	return string(out)
}

// fixture keeps the CLI's output as agentout's fixture with -update.
func fixture(t *testing.T, name, out string) {
	if *update {
		if err := os.WriteFile(filepath.Join("..", "..", "agentout", "testdata", name), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parse(t *testing.T, out string) agentout.Run {
	t.Helper()
	r, err := agentout.Parse(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cliEnv is a fresh home folder and the stub's address; nothing of the user's own login.
func cliEnv(t *testing.T, extra ...string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(), "IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, extra...)
}

// TestClaudeAgainstStub: the real claude, at the Messages API stub, runs a tool and ends;
// its session id, cost and tokens are read from its stream-json; --resume <id> reaches the
// stub as the same session, with the first call's conversation; a resumed run's
// total_cost_usd and usage count that call only (per call, not cumulative).
func TestClaudeAgainstStub(t *testing.T) {
	s := Anthropic(t, Turn{Command: "echo hi > out.txt"}, Turn{Text: "done"})
	dir := t.TempDir()
	env := cliEnv(t, "ANTHROPIC_BASE_URL="+s.URL, "ANTHROPIC_API_KEY=sk-ant-stub")
	args := []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}
	out := cli(t, env, dir, "Write hi to out.txt.", args...)
	fixture(t, "claude-tool-use.jsonl", out)
	r := parse(t, out)
	if r.Format != agentout.FormatClaude || r.SessionID == "" || r.Failed || !r.Final || r.Message != "done" {
		t.Fatalf("claude's run read as %+v", r)
	}
	if r.CostUSD == nil || *r.CostUSD <= 0 || r.Tokens.Input != 2*Usage.Input || r.Tokens.Output != 2*Usage.Output {
		t.Fatalf("claude's spend read as %v usd, %+v; the stub reported %d+%d tokens twice", r.CostUSD, r.Tokens, Usage.Input, Usage.Output)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(data) != "hi\n" {
		t.Fatalf("claude did not run the scripted tool: out.txt %q", data)
	}
	first := *r.CostUSD

	out = cli(t, env, dir, "And now?", append(args, "--resume", r.SessionID)...)
	fixture(t, "claude-resumed.jsonl", out)
	rr := parse(t, out)
	if rr.SessionID != r.SessionID {
		t.Fatalf("resumed session %q, want %q", rr.SessionID, r.SessionID)
	}
	main := s.Main()
	last := main[len(main)-1]
	if last.Session != r.SessionID || last.Turn != 2 || !strings.Contains(last.FirstUser, "Write hi to out.txt.") {
		t.Fatalf("the resumed call reached the stub as session %q with %d assistant turns, first prompt %q", last.Session, last.Turn, last.FirstUser)
	}
	if rr.CostUSD == nil || *rr.CostUSD*2 != first || rr.Tokens.Input != Usage.Input {
		t.Fatalf("resumed cost %v, tokens %+v: want one call's (per call: %v / 2, %d input)", rr.CostUSD, rr.Tokens, first, Usage.Input)
	}
}

// TestCodexAgainstStub: the real codex, at a Responses API provider on the stub, runs a
// command and ends; the thread id and tokens are read from its --json; `codex exec resume
// <id>` reaches the stub as the same session; a resumed run's turn.completed usage counts
// the whole thread (cumulative: the first run's tokens plus this call's).
func TestCodexAgainstStub(t *testing.T) {
	s := OpenAI(t, Turn{Command: "echo hi > out.txt"}, Turn{Text: "done"})
	dir := t.TempDir()
	env := cliEnv(t, "STUB_KEY=sk-stub")
	provider := CodexProvider(s.URL, "STUB_KEY")
	out := cli(t, env, dir, "Write hi to out.txt.", append(append([]string{"codex", "exec", "--json", "--skip-git-repo-check",
		"--sandbox", "danger-full-access"}, provider...), "-")...)
	fixture(t, "codex-tool-use.jsonl", out)
	r := parse(t, out)
	if r.Format != agentout.FormatCodex || r.SessionID == "" || r.Failed || !r.Final || r.Message != "done" || r.CostUSD != nil {
		t.Fatalf("codex's run read as %+v", r)
	}
	if r.Tokens.Input != 2*Usage.Input || r.Tokens.Output != 2*Usage.Output {
		t.Fatalf("codex's tokens read as %+v; the stub reported %d+%d twice", r.Tokens, Usage.Input, Usage.Output)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "out.txt")); string(data) != "hi\n" {
		t.Fatalf("codex did not run the scripted command: out.txt %q", data)
	}
	out = cli(t, env, dir, "And now?", append(append([]string{"codex", "exec", "resume", "--json", "--skip-git-repo-check"},
		provider...), r.SessionID, "-")...)
	fixture(t, "codex-resumed.jsonl", out)
	rr := parse(t, out)
	main := s.Main()
	last := main[len(main)-1]
	if rr.SessionID != r.SessionID || last.Session != r.SessionID || last.Turn != 2 || last.FirstUser != "Write hi to out.txt." {
		t.Fatalf("resumed as %q; the stub saw session %q, %d turns, first prompt %q", rr.SessionID, last.Session, last.Turn, last.FirstUser)
	}
	if rr.Tokens.Input != 3*Usage.Input {
		t.Fatalf("resumed input tokens %d: want the thread's %d (cumulative)", rr.Tokens.Input, 3*Usage.Input)
	}
}

// TestCodexRefusedByStub: a codex whose every request is refused (401, as for a key that
// is not valid) never worked: its turn fails before any work, in its own words.
func TestCodexRefusedByStub(t *testing.T) {
	s := Unauthorized(t)
	out := cliExit(t, 1, cliEnv(t, "STUB_KEY=sk-bad"), t.TempDir(), "hi", append(append([]string{"codex", "exec", "--json", "--skip-git-repo-check",
		"--sandbox", "danger-full-access"}, CodexProvider(s.URL, "STUB_KEY")...), "-")...)
	fixture(t, "codex-unauthorized.jsonl", out)
	why, ok := parse(t, out).NotStarted()
	if !ok || !strings.Contains(why, "401") {
		t.Fatalf("a refused codex read as not started=%v (%q): %s", ok, why, out)
	}
}

// TestClaudeNotLoggedIn: claude with no credentials at all (no key, a fresh home folder)
// starts a session and reports in its result object that it never worked.
func TestClaudeNotLoggedIn(t *testing.T) {
	s := Anthropic(t, Turn{Text: "unused"})
	out := cliExit(t, 1, cliEnv(t, "ANTHROPIC_BASE_URL="+s.URL), t.TempDir(), "hi",
		"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions")
	fixture(t, "claude-not-logged-in.jsonl", out)
	why, ok := parse(t, out).NotStarted()
	if !ok || why != "Not logged in · Please run /login" {
		t.Fatalf("claude without credentials read as not started=%v (%q): %s", ok, why, out)
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("claude without credentials called the model API %d time(s)", n)
	}
}
