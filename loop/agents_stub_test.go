package loop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/agentout"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/modelstub"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/loop"
)

// TestPresetsAgainstModelStubs: the real claude and codex (as .ci/run installs them), each
// pointed at a loopback stand-in of its model API that scripts the model's turns, run one
// iteration of the loop through their presets' exact command lines, in hgate's sandbox
// where there is one. The attempt's session breaks every task (a shell command, then
// "done"): the gate rejects it, and the repair resumes that session (claude -p --resume
// <id>, codex exec resume <id>), which the stub sees as the same session holding the
// attempt's turns, and there makes every task pass: kept. The iteration's session id is
// the one the stub saw; its spend is the four calls' (codex's cumulative count of the
// resumed thread taken once); the transcript is agent.stdout; and a resume by hand of the
// session reaches the stub as the same session too.
func TestPresetsAgainstModelStubs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			modelstub.NeedCLI(t, name)
			// By the assistant turns the conversation holds: a fresh session breaks
			// the tasks; only the attempt's session, resumed, can fix them.
			script := []modelstub.Turn{{Command: "echo 'exit 1' > agent.sh"}, {Text: "done"}, {Command: "cp best.sh agent.sh"}, {Text: "fixed"}}
			home := t.TempDir()
			t.Setenv("HOME", home)
			for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME"} {
				// Unset, not empty: claude takes an empty CLAUDE_CONFIG_DIR for a folder
				// named "" (relative paths such as session-env in the repository).
				t.Setenv(k, "")
				os.Unsetenv(k)
			}
			var stub *modelstub.Server
			var resume []string
			switch name {
			case "claude":
				stub = modelstub.Anthropic(t, script...)
				t.Setenv("ANTHROPIC_BASE_URL", stub.URL)
				t.Setenv("ANTHROPIC_API_KEY", "sk-ant-stub")
				t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
				t.Setenv("IS_SANDBOX", "1") // without hgate's sandbox, as root
				resume = []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--resume", "{id}"}
			case "codex":
				stub = modelstub.OpenAI(t, script...)
				// The preset's command line is unchanged: the provider comes from codex's
				// own config file, in the home folder the preset opens.
				if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o755); err != nil {
					t.Fatal(err)
				}
				toml := "model = \"gpt-5\"\nmodel_provider = \"hgatestub\"\n[model_providers.hgatestub]\nname = \"hgatestub\"\nbase_url = \"" +
					stub.URL + "/v1\"\nwire_api = \"responses\"\nenv_key = \"HGATE_STUB_KEY\"\n"
				if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(toml), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Setenv("HGATE_STUB_KEY", "sk-stub")
				resume = []string{"codex", "exec", "resume", "--json", "--skip-git-repo-check", "{id}", "-"}
			}
			r := stubProject(t, name)
			env, err := openEnv(r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			lc := env.Config.Loop
			if _, err := sandbox.Available(); err != nil {
				t.Logf("no sandbox here (%v): the agent runs without it", err)
				lc.Sandbox.Enabled = false
			}
			var log bytes.Buffer
			s, err := loop.Run(context.Background(), loop.Options{Env: env, Loop: lc, Log: &log, Grace: time.Second})
			if err != nil {
				t.Fatalf("loop: %v\n%s", err, log.String())
			}
			it := s.Iterations[0]
			stdout := filepath.Join(r.Dir, "workspace", "runs", s.RunID, "iterations", "1", "agent.stdout")
			if it.Outcome != loop.OutcomeKept || it.Agent != loop.AgentOK || it.Repairs != 1 {
				data, _ := os.ReadFile(stdout)
				t.Fatalf("iteration: %s, agent %s (%s)\n%s\nagent.stdout:\n%s", it.Outcome, it.Agent, it.AgentDetail, log.String(), data)
			}
			main := stub.Main()
			if len(main) != 4 || it.SessionID == "" {
				t.Fatalf("session %q in summary.json; the stub saw %d calls, want 4", it.SessionID, len(main))
			}
			for i, c := range main {
				if c.Session != it.SessionID || c.Turn != i {
					t.Fatalf("call %d reached the stub as session %q with %d assistant turns; want %q with %d", i+1, c.Session, c.Turn, it.SessionID, i)
				}
			}
			want := agentout.Tokens{Input: 4 * modelstub.Usage.Input, Output: 4 * modelstub.Usage.Output}
			// The loop's model gateway metered the four calls: its count is the spend, in
			// dollars for codex too (priced by its table).
			if it.Tokens == nil || *it.Tokens != want || it.CostUSD == nil || *it.CostUSD <= 0 || !it.Metered {
				t.Fatalf("spend in summary.json: %v usd, tokens %+v, metered %v; want the stub's four calls (%+v), in dollars", it.CostUSD, it.Tokens, it.Metered, want)
			}
			data, err := os.ReadFile(stdout)
			if err != nil || !bytes.Contains(data, []byte(it.SessionID)) {
				t.Fatalf("the transcript (agent.stdout) does not hold the session: %v", err)
			}
			summary, err := os.ReadFile(filepath.Join(r.Dir, "workspace", "runs", s.RunID, "summary.json"))
			if err != nil || !json.Valid(summary) || !bytes.Contains(summary, []byte(`"session_id": "`+it.SessionID+`"`)) {
				t.Fatalf("summary.json does not name the session: %v\n%s", err, summary)
			}

			for i, a := range resume {
				resume[i] = strings.ReplaceAll(a, "{id}", it.SessionID)
			}
			// The session is in the run's private CLI home, never in the user's: a resume by
			// hand names that home (docs/guide/agents.md).
			private := filepath.Join(r.Dir, "workspace", "runs", s.RunID, "cli-home", "1")
			for _, p := range []string{".claude/projects", ".claude.json", ".codex/sessions"} {
				if _, err := os.Lstat(filepath.Join(home, p)); err == nil && lc.Sandbox.Enabled {
					t.Fatalf("the sandboxed run wrote the user's ~/%s", p)
				}
			}
			cmd := exec.Command(resume[0], resume[1:]...)
			cmd.Dir, cmd.Stdin = r.Dir, strings.NewReader("What did you change?")
			if lc.Sandbox.Enabled {
				v := map[string]string{"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}[name]
				cmd.Env = append(os.Environ(), v+"="+private)
			}
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(resume, " "), err, out)
			}
			run, _ := agentout.Parse(bytes.NewReader(out))
			main = stub.Main()
			last := main[len(main)-1]
			if run.SessionID != it.SessionID || last.Session != it.SessionID || last.Turn != 4 || !strings.Contains(last.FirstUser, "hgate loop context") {
				t.Fatalf("the resume ran as session %q and reached the stub as %q with %d assistant turns, first prompt %.80q", run.SessionID, last.Session, last.Turn, last.FirstUser)
			}
		})
	}
}

// stubProject is a prepared repository whose tasks pass once agent.sh is best.sh, with the
// preset as its agent.
func stubProject(t *testing.T, preset string) *gittest.Repo {
	r := gittest.New(t)
	r.WriteFiles(stubFiles(preset, "  iterations: 1\n  repair_attempts: 1\n"))
	return commitAndPrepare(t, r)
}

// stubFiles are stubProject's files, loopKeys (indented YAML) ending hgate.yaml's loop section.
func stubFiles(preset, loopKeys string) map[string]string {
	return map[string]string{
		".gitignore": "/workspace/\n",
		"PROGRAM.md": "# Program\nMake every task pass. Edit agent.sh only.\n",
		"hgate.yaml": `allow: [agent.sh]
benchmark:
  tasks: {file: tasks.txt}
  run: ["sh", "check.sh", "{task}"]
  concurrency: 2
split: {test_fraction: 0.5}
loop:
  agent: ` + preset + `
  attempt_timeout: 10m
` + loopKeys,
		"tasks.txt": "b1\nb2\nb3\nb4\n",
		"check.sh":  "out=$(sh agent.sh \"$1\")\n[ \"$out\" = \"solved $1\" ]\n",
		"agent.sh":  "case $1 in b1) echo \"solved $1\" ;; esac\n",
		"best.sh":   "echo \"solved $1\"\n",
	}
}
