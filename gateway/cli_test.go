package gateway

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/spend"
)

// runCLI runs a real agent CLI with a fresh home, the prompt on stdin; it returns the
// exit code and the output. A CLI that retried a refusal would run into the deadline.
func runCLI(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	modelstub.NeedCLI(t, args[0])
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TMPDIR=" + t.TempDir(), "IS_SANDBOX=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}, env...)
	cmd.Stdin = strings.NewReader("Write hi to out.txt.")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s did not end in 3 minutes (it retries the refusal?):\n%s", args[0], out.String())
	}
	if strings.Contains(out.String(), "native binary not installed") {
		t.Skipf("%s: the npm package's native binary is not in place", args[0])
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

var claudeArgs = []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"}

// TestClaudeThroughGateway: the real claude, its base URL the gateway's, streams through
// it; the gateway's tokens are the stub's, and the key the stub sees is the gateway's.
func TestClaudeThroughGateway(t *testing.T) {
	s := modelstub.Anthropic(t, modelstub.Turn{Command: "echo hi > out.txt"}, modelstub.Turn{Text: "done"})
	g, base := start(t, Config{AnthropicURL: s.URL, AnthropicKey: "sk-ant-held"}, "attempt")
	code, out := runCLI(t, []string{"ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_API_KEY=hgate-gateway"}, claudeArgs...)
	if code != 0 {
		t.Fatalf("claude exited %d:\n%s", code, out)
	}
	reqs := s.Requests()
	want := spend.Tokens{Input: int64(len(reqs)) * modelstub.Usage.Input, Output: int64(len(reqs)) * modelstub.Usage.Output}
	if got := g.Book().Total(); got.Tokens != want || got.Open != 0 || len(s.Main()) < 2 {
		t.Fatalf("the gateway counted %+v; the stub answered %d requests (%d main), want tokens %+v", got, len(reqs), len(s.Main()), want)
	}
	for _, r := range reqs {
		if r.Header.Get("X-Api-Key") != "sk-ant-held" {
			t.Fatalf("the stub saw key %q", r.Header.Get("X-Api-Key"))
		}
	}
}

// TestClaudeStopsAtTheBudget: with a budget below the second model request, claude gets
// the refusal, does not retry it, and exits; the stub saw one request.
func TestClaudeStopsAtTheBudget(t *testing.T) {
	s := modelstub.Anthropic(t, modelstub.Turn{Command: "echo hi > out.txt"}, modelstub.Turn{Text: "done"})
	var log strings.Builder
	g, base := start(t, Config{AnthropicURL: s.URL, Limits: Limits{Tokens: 1000}, Log: &log}, "attempt")
	code, out := runCLI(t, []string{"ANTHROPIC_BASE_URL=" + base, "ANTHROPIC_API_KEY=sk-ant-stub"}, claudeArgs...)
	t.Logf("the gateway's log:\n%s", log.String())
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests reached the stub, want 1 (exit %d):\n%s", n, code, out)
	}
	if code == 0 || !strings.Contains(out, "budget reached") {
		t.Fatalf("claude exited %d without the refusal's words:\n%s", code, out)
	}
	if tot := g.Book().Total(); tot.Refused != 1 {
		t.Fatalf("refused %d requests, want 1 (claude retried?): %+v", tot.Refused, tot)
	}
}

// codexArgs points codex at the gateway as its model provider.
func codexArgs(base string) []string {
	return append(append([]string{"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "danger-full-access"},
		modelstub.CodexProvider(base, "GATEWAY_KEY")...), "-")
}

// TestCodexThroughGateway: the real codex through the gateway: tokens equal the stub's.
func TestCodexThroughGateway(t *testing.T) {
	s := modelstub.OpenAI(t, modelstub.Turn{Command: "echo hi > out.txt"}, modelstub.Turn{Text: "done"})
	g, base := start(t, Config{OpenAIURL: s.URL + "/v1", OpenAIKey: "sk-held"}, "attempt")
	code, out := runCLI(t, []string{"GATEWAY_KEY=hgate-gateway"}, codexArgs(base)...)
	if code != 0 {
		t.Fatalf("codex exited %d:\n%s", code, out)
	}
	reqs := s.Requests()
	want := spend.Tokens{Input: int64(len(reqs)) * modelstub.Usage.Input, Output: int64(len(reqs)) * modelstub.Usage.Output}
	if got := g.Book().Total(); got.Tokens != want || len(reqs) < 2 {
		t.Fatalf("the gateway counted %+v; the stub answered %d requests, want %+v", got, len(reqs), want)
	}
	if h := reqs[0].Header.Get("Authorization"); h != "Bearer sk-held" {
		t.Fatalf("the stub saw %q", h)
	}
}

// TestCodexStopsAtTheBudget: codex does not retry the refusal either.
func TestCodexStopsAtTheBudget(t *testing.T) {
	s := modelstub.OpenAI(t, modelstub.Turn{Command: "echo hi > out.txt"}, modelstub.Turn{Text: "done"})
	var log strings.Builder
	g, base := start(t, Config{OpenAIURL: s.URL + "/v1", Limits: Limits{Tokens: 1000}, Log: &log}, "attempt")
	code, out := runCLI(t, []string{"GATEWAY_KEY=sk-stub"}, codexArgs(base)...)
	t.Logf("the gateway's log:\n%s", log.String())
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests reached the stub, want 1 (exit %d):\n%s", n, code, out)
	}
	if code == 0 || !strings.Contains(out, "budget reached") {
		t.Fatalf("codex exited %d without the refusal's words:\n%s", code, out)
	}
	if tot := g.Book().Total(); tot.Refused != 1 {
		t.Fatalf("refused %d requests, want 1 (codex retried?): %+v", tot.Refused, tot)
	}
}
