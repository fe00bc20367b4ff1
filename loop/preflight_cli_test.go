package loop_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/loop"
)

// TestPreflightAgainstModelStubs: the real claude and codex, through their presets' exact
// command lines and at a loopback stand-in of their model API, pass the preflight (hgate
// check's agent level): each starts in hgate's sandbox, reaches its model (the stub saw
// exactly one call, with the preflight's prompt) and ends; hgate's own write of agent.sh
// in that sandbox succeeds; Steps 0-1 run on it; the spend is the stub's one call; and the
// repository is as before: no commit, the worktree untouched, no linked worktree left.
func TestPreflightAgainstModelStubs(t *testing.T) {
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			modelstub.NeedCLI(t, name)
			stub := pointAtStub(t, name, modelstub.Turn{Text: "READY"})
			r := stubProject(t, name)
			env, err := openEnv(r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			lc := env.Config.Loop
			if _, err := sandbox.Available(); err != nil {
				t.Skipf("no sandbox here: %v", err)
			}
			head := r.Git("rev-parse", "HEAD")
			var log strings.Builder
			p, err := loop.RunPreflight(context.Background(), loop.PreflightOptions{Env: env, Loop: lc, Log: &log, Grace: time.Second})
			if err != nil {
				t.Fatalf("preflight: %v\n%s", err, log.String())
			}
			if msg := p.Problem(); msg != "" || !p.ReadOutput || p.Wrote != "agent.sh" {
				t.Fatalf("preflight: %q; %+v\n%s", msg, p, log.String())
			}
			if p.Gate == nil || p.Gate.Steps.Step0 == nil || !p.Gate.Steps.Step0.OK || p.GateError != "" {
				t.Fatalf("Steps 0-1 on hgate's write: %+v, %q", p.Gate, p.GateError)
			}
			main := stub.Main()
			if len(main) != 1 || !strings.Contains(main[0].FirstUser, "preflight") {
				t.Fatalf("the stub saw %d calls (want 1, with the preflight's prompt): %+v", len(main), main)
			}
			if p.Tokens != modelstub.Usage.Input+modelstub.Usage.Output || (name == "claude") != (p.SpendUSD > 0) {
				t.Fatalf("spend %v usd, %d tokens; want the stub's one call (%d tokens), in dollars too for claude", p.SpendUSD, p.Tokens, modelstub.Usage.Input+modelstub.Usage.Output)
			}
			if got := r.Git("rev-parse", "HEAD"); got != head {
				t.Fatalf("HEAD moved: %s, was %s", got, head)
			}
			if st := r.Git("status", "--porcelain"); st != "" {
				t.Fatalf("the worktree changed: %s", st)
			}
			if wts := r.Git("worktree", "list"); strings.Count(strings.TrimSpace(wts), "\n") > 0 {
				t.Fatalf("a linked worktree was left: %s", wts)
			}
		})
	}
}

// pointAtStub points the named CLI at a model stub playing script, through its
// environment or its own config file in a fresh home folder, its preset's command line
// unchanged (as TestPresetsAgainstModelStubs does).
func pointAtStub(t *testing.T, name string, script ...modelstub.Turn) *modelstub.Server {
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	if name == "claude" {
		stub := modelstub.Anthropic(t, script...)
		t.Setenv("ANTHROPIC_BASE_URL", stub.URL)
		t.Setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
		t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
		return stub
	}
	stub := modelstub.OpenAI(t, script...)
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	toml := "model = \"gpt-5\"\nmodel_provider = \"hgatestub\"\n[model_providers.hgatestub]\nname = \"hgatestub\"\nbase_url = \"" +
		stub.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"HGATE_STUB_KEY\"\n"
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HGATE_STUB_KEY", "sk-stub")
	return stub
}

// TestPreflightModelRefused: the real codex at a model API that refuses its key (401)
// starts but never finishes a model turn: the preflight says so in one line, and hgate
// writes nothing (its write comes after the agent's turn).
func TestPreflightModelRefused(t *testing.T) {
	modelstub.NeedCLI(t, "codex")
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	refused := modelstub.Unauthorized(t)
	pointAtStub(t, "codex", modelstub.Turn{Text: "unused"})
	home := os.Getenv("HOME")
	toml := "model = \"gpt-5\"\nmodel_provider = \"hgatestub\"\n[model_providers.hgatestub]\nname = \"hgatestub\"\nbase_url = \"" +
		refused.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"HGATE_STUB_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	r := stubProject(t, "codex")
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := loop.RunPreflight(context.Background(), loop.PreflightOptions{Env: env, Loop: env.Config.Loop, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	msg := p.Problem()
	if msg == "" || strings.Contains(msg, "\n") || p.Wrote != "" || p.Gate != nil {
		t.Fatalf("preflight at a refusing model: problem %q, wrote %q, gate %v", msg, p.Wrote, p.Gate)
	}
	t.Logf("problem: %s", msg)
}
