package loop

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/timescale"
)

// cliRefusal is what the real CLIs print when they refuse their command line or their
// configuration: an option they do not know (claude: "unknown option", codex: clap's
// "unexpected argument"), a value they do not accept, an MCP server they cannot read, the
// root guard, a home folder the sandbox keeps them from writing, or no prompt on stdin.
var cliRefusal = regexp.MustCompile(`(?i)unknown option|unexpected argument|invalid value|error: .*required|` +
	`Invalid MCP configuration|Error loading config|invalid transport|cannot be used with root|` +
	`failed to initialize|is corrupted|EACCES|EROFS|Input must be provided|No prompt provided`)

// cliStarted is what a CLI prints once it took its command line and configuration and
// went on to ask its model: the test stops it there (there is no network to the model).
var cliStarted = map[string]*regexp.Regexp{
	"claude": regexp.MustCompile(`Not logged in|Invalid API key|API Error|Please run /login`),
	"codex":  regexp.MustCompile(`(?m)^session id: |Reconnecting|stream disconnected|401 Unauthorized`),
}

// TestPresetsAgainstInstalledCLIs runs each preset's exact command line against the real
// CLI where it is installed (.ci/run installs claude and codex from npm), inside hgate's
// sandbox with the folders the preset opens, a fresh home folder, no credentials and the
// prompt on stdin, as the loop runs it. The CLI cannot reach its model: it is stopped
// once it has gone past its command line and configuration to ask the model. Whatever it
// printed must hold no refusal, so a release that drops or renames a flag the preset
// passes, or moves its home folder, fails here.
func TestPresetsAgainstInstalledCLIs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the real claude or codex")
	}
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			bin, err := exec.LookPath(name)
			if err != nil {
				t.Skipf("%s is not installed (npm install -g --ignore-scripts %s): %v", name, npmPackage[name], err)
			}
			out := runPresetCLI(t, name)
			t.Logf("%s (%s) printed:\n%s", name, bin, lastBytes(out, 2000))
			if strings.Contains(out, "native binary not installed") {
				t.Skipf("%s: the npm package's native binary is not in place (run its install.cjs): %s", name, lastBytes(out, 300))
			}
			if m := cliRefusal.FindString(out); m != "" {
				t.Fatalf("%s refused the preset's command line or setup (%q): %s", name, m, lastBytes(out, 1500))
			}
			if !cliStarted[name].MatchString(out) {
				t.Fatalf("%s ended without reaching its model: %s", name, lastBytes(out, 1500))
			}
			switch name {
			case "claude":
				// claude logs each MCP server's start in its cache: hgate's was read from
				// --mcp-config, and the folder the preset opens is the one claude writes.
				logs, _ := filepath.Glob(filepath.Join(os.Getenv("HOME"), ".cache/claude-cli-nodejs/*/mcp-logs-hgate"))
				if len(logs) == 0 {
					t.Errorf("claude left no log of the hgate MCP server in ~/.cache/claude-cli-nodejs/")
				}
			case "codex":
				checkCodexSandbox(t)
			}
		})
	}
}

// checkCodexSandbox runs a command the way codex runs the model's commands, in the
// sandbox mode the preset asks for, inside hgate's sandbox: a mode whose own sandbox
// cannot start there (workspace-write: bubblewrap cannot map its user namespace under
// Landlock) would leave codex unable to run anything.
func checkCodexSandbox(t *testing.T) {
	args, _ := Command([]string{"codex"}, "")
	mode := args[slices.Index(args, "--sandbox")+1]
	out, res := runInJail(t, "codex", []string{"codex", "sandbox", "-c", `sandbox_mode="` + mode + `"`, "--",
		"sh", "-c", "echo ran > ran.txt && cat ran.txt"}, "", nil)
	if res.ExitCode != 0 || !strings.Contains(out, "ran") {
		t.Fatalf("codex cannot run a command in its %s sandbox inside hgate's (%+v): %s", mode, res, lastBytes(out, 1500))
	}
}

var npmPackage = map[string]string{"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex"}

// runPresetCLI runs the preset as the loop would and returns what it printed, stopping it
// once cliStarted matches.
func runPresetCLI(t *testing.T, name string) string {
	prompt := filepath.Join(t.TempDir(), "prompt.md")
	if err := os.WriteFile(prompt, []byte("Reply with the word ok.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := Command([]string{name}, prompt)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := runInJail(t, name, args, prompt, cliStarted[name])
	return out
}

// runInJail runs args in a fresh git repository inside hgate's sandbox as the loop opens
// it for the preset (a fresh home folder, the CLI's private home made from it, no
// credentials), stdin from the file stdin
// ("": none), and returns what it printed and how it ended. It is stopped once its
// output matches stop, or after two minutes, a guard against a hang.
func runInJail(t *testing.T, preset string, args []string, stdin string, stop *regexp.Regexp) (string, proc.Result) {
	dir := t.TempDir()
	home, repo, tmp := filepath.Join(dir, "home"), filepath.Join(dir, "repo"), filepath.Join(dir, "tmp")
	for _, d := range []string{home, repo, tmp, filepath.Join(dir, "run")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	t.Setenv("HOME", home) // the preset's ~ paths resolve here
	for _, k := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME"} {
		// Unset, not empty: claude takes an empty CLAUDE_CONFIG_DIR for a folder named "".
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	write := []string{repo, tmp}
	// The CLI's private home, made as the loop makes it (clihome.go).
	r := &runner{dir: filepath.Join(dir, "run"), log: io.Discard, cfg: config.Loop{Agent: []string{preset}}, j: &journal{}}
	r.j.Sandbox = "landlock"
	cliHome, err := r.cliHome(0)
	if err != nil {
		t.Fatal(err)
	}
	homeEnv := []string{agentcli.For([]string{preset}).Home().Var + "=" + cliHome}
	write = append(write, cliHome)
	for _, w := range agentcli.For([]string{preset}).Writable() {
		p, err := openWritable("preset", w, repo, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p != "" {
			write = append(write, p)
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = repo
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + tmp,
		"HGATE_LOOP_SOCKET=" + filepath.Join(tmp, "no.sock")}, append(homeEnv, agentcli.For([]string{preset}).Env(true, tmp)...)...)
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	if err := sandbox.Wrap(cmd, sandbox.Policy{Write: write, Reap: true}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &watchedOutput{match: stop, matched: cancel}
	// Only a hang guard: a CLI under load can take minutes to start.
	wait := timescale.D(10 * time.Minute)
	p, err := proc.Start(cmd, proc.Options{Stdout: out, Stderr: out, Timeout: wait, Grace: 2 * time.Second, Reaper: true})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Wait(ctx)
	if res.TimedOut {
		t.Fatalf("%s neither ended nor reached its model in %v: %s", args[0], wait, lastBytes(out.String(), 1500))
	}
	return out.String(), res
}

// watchedOutput collects a process's output and calls matched once it matches.
type watchedOutput struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	match   *regexp.Regexp
	matched func()
}

func (w *watchedOutput) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(b)
	if w.match != nil && w.match.Match(w.buf.Bytes()) {
		w.matched()
	}
	return len(b), nil
}

func (w *watchedOutput) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func lastBytes(s string, n int) string { // tail reads a file
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// TestPresetHomeFolders: a preset's folders besides its home (claude's log cache) are
// created when missing; its home is never among them (the run's private one is granted
// instead, clihome.go); a loop.sandbox.writable entry naming ~/.claude.json still starts
// it as {}, never overwritten.
func TestPresetHomeFolders(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", filepath.Join(dir, "home"))
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", filepath.Join(dir, "codex-home"))
	open := func(paths []string) []string {
		var got []string
		for _, w := range paths {
			p, err := openWritable("preset", w, dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p)
		}
		return got
	}
	home := filepath.Join(dir, "home")
	want := []string{filepath.Join(home, ".cache/claude-cli-nodejs")}
	if got := open(agentcli.For([]string{"claude"}).Writable()); !slices.Equal(got, want) {
		t.Fatalf("claude opens %q, want %q", got, want)
	}
	if got := open(agentcli.For([]string{"codex"}).Writable()); len(got) != 0 {
		t.Fatalf("codex opens %q, want nothing", got)
	}
	open([]string{"~/.claude.json"})
	if data, _ := os.ReadFile(filepath.Join(home, ".claude.json")); string(data) != "{}\n" {
		t.Fatalf(".claude.json starts as %q, want {}", data)
	}
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(`{"numStartups":3}`), 0o600); err != nil {
		t.Fatal(err)
	}
	open([]string{"~/.claude.json"})
	if data, _ := os.ReadFile(filepath.Join(home, ".claude.json")); string(data) != `{"numStartups":3}` {
		t.Fatalf(".claude.json was overwritten: %q", data)
	}
}
