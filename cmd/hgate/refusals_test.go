//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/lock"
)

// refusalShape is the one shape of every refusal of hgate loop to start.
var refusalShape = regexp.MustCompile(`^hgate: loop: not started: .+ \(.+\): .+$`)

// refusal is one way hgate loop refuses to start: setup makes its condition in a copy of
// the prepared repository (with one finished run) and returns the arguments and extra
// environment; want is the line's reason, (file or key) and fix.
type refusal struct {
	name  string
	setup func(t *testing.T, dir string) (args, env []string)
	want  string
}

// refusals is every refusal docs/reference/exit-codes.md's "Refusals of hgate loop to start"
// lists, in that table's order: a row each (no Landlock has two, a new run and a resume).
var refusals = []refusal{
	{"a bad flag", plain("loop", "--no-sandbox", "--iterations=-1"),
		`--iterations: .* \(the command line\): hgate loop --help`},
	{"a bad hgate.yaml", plain("--config", "bad.yaml", "loop", "--no-sandbox"),
		`bad.yaml:\d+: concurency: unknown key .* \(bad.yaml\): correct it`},
	{"no repository", func(t *testing.T, dir string) ([]string, []string) {
		must(t, os.RemoveAll(filepath.Join(dir, ".git")))
		return []string{"loop", "--no-sandbox"}, nil
	}, `no .git found .* \(the repository\): correct it`},
	{"harness with two agents", plain("loop", "--no-sandbox", "--agents", "2", "--harness"),
		`2 agents with the harness phases, .* \(loop.agents\): set loop.agents: 1`},
	{"the lock held (--no-wait)", func(t *testing.T, dir string) ([]string, []string) {
		l, err := lock.Acquire(context.Background(), filepath.Join(dir, ".git", "hgate.lock"), lock.Options{Command: "test"})
		must(t, err)
		t.Cleanup(func() { l.Release() })
		return []string{"--no-wait", "loop", "--no-sandbox"}, nil
	}, `\(the repository's hgate lock\): wait for the other hgate`},
	{"git config key", func(t *testing.T, dir string) ([]string, []string) {
		git(t, dir, "config", "filter.x.clean", "cat")
		return []string{"loop", "--no-sandbox"}, nil
	}, `filter.x.clean \(line \d+\): .* \(\S*\.git/config\): git config --unset each key it names`},
	{"git attribute", func(t *testing.T, dir string) ([]string, []string) {
		must(t, os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, ".git", "info", "attributes"), []byte("* filter=x\n"), 0o644))
		return []string{"loop", "--no-sandbox"}, nil
	}, `filter=x \(line 1\): .* \(\S*\.git/info/attributes\): delete each attribute`},
	{"not prepared", func(t *testing.T, dir string) ([]string, []string) {
		must(t, os.Remove(filepath.Join(dir, "workspace", "results.tsv")))
		return []string{"loop", "--no-sandbox"}, nil
	}, `no results.tsv: the workspace is not prepared \(workspace/results.tsv\): hgate prepare$`},
	{"state differs from the ledger", func(t *testing.T, dir string) ([]string, []string) {
		appendFile(t, filepath.Join(dir, "workspace", "results.tsv"), "junk\n")
		return []string{"loop", "--no-sandbox"}, nil
	}, `results.tsv: modified outside hgate .* \(refs/hgate/ledger\): hgate state log`},
	{"an untracked file outside allow", func(t *testing.T, dir string) ([]string, []string) {
		must(t, os.WriteFile(filepath.Join(dir, "stray.txt"), []byte("x\n"), 0o644))
		return []string{"loop", "--no-sandbox"}, nil
	}, `changes outside allow, .* \(stray.txt \(untracked: .*\)\): revert each as shown$`},
	{"uncommitted work in an allowed file", func(t *testing.T, dir string) ([]string, []string) {
		appendFile(t, filepath.Join(dir, "agent.sh"), "# mine\n")
		return []string{"loop", "--no-sandbox"}, nil
	}, `uncommitted changes in allowed files, .* \(agent.sh\): gate them first`},
	{"no program file", func(t *testing.T, dir string) ([]string, []string) {
		must(t, os.Remove(filepath.Join(dir, "PROGRAM.md")))
		return []string{"loop", "--no-sandbox"}, nil
	}, `the program file does not exist \(PROGRAM.md\): write the agent's instructions there`},
	{"the agent's program not found", plain("loop", "--no-sandbox", "--agent", "no-such-agent-xyz"),
		`the agent's program no-such-agent-xyz cannot be run \(.*\) \(loop.agent\): install it`},
	// No Landlock: this machine has it, so the kernel's answer is denied at its seam.
	{"no sandbox (seam: HGATE_FAULT=deny:landlock)", func(t *testing.T, dir string) ([]string, []string) {
		return []string{"loop", "--iterations", "1"}, []string{"HGATE_FAULT=deny:landlock"}
	}, `the agent cannot be sandboxed here \(denied by \S+\) \(loop.sandbox\): hgate loop --no-sandbox,`},
	{"no sandbox on resume (seam: HGATE_FAULT=deny:landlock)", func(t *testing.T, dir string) ([]string, []string) {
		return []string{"loop", "--resume", "--iterations", "1"}, []string{"HGATE_FAULT=deny:landlock"}
	}, `the agent cannot be sandboxed here \(denied by \S+\) \(loop.sandbox\): hgate loop --resume --no-sandbox,`},
	{"network model without the sandbox", plain("--config", "net.yaml", "loop", "--no-sandbox"),
		`network model needs the agent's sandbox, which is off \(loop.sandbox.network\): set loop.sandbox.network: all`},
	// No network namespace: denied at its seam, as above.
	{"no network namespace (seam: HGATE_FAULT=deny:namespaces)", func(t *testing.T, dir string) ([]string, []string) {
		return []string{"--config", "net.yaml", "loop", "--iterations", "1"}, []string{"HGATE_FAULT=deny:namespaces"}
	}, `network model needs a network namespace, .* \(loop.sandbox.network\): set loop.sandbox.network: all`},
	{"hidden data committed", plain("--config", "hidden.yaml", "loop", "--iterations", "1"),
		`data hidden from the agent is committed to git, .* \(hidden.yaml: loop.sandbox.hidden: secret.txt \(in commit \w+\)\): keep such data untracked`},
	{"the preflight", plain("loop", "--no-sandbox", "--preflight", "--agent", "exit 3"),
		`preflight: the agent \(custom\) crashed: .* \(loop.agent\): hgate check --level agent`},
	{"the model gateway's upstream", func(t *testing.T, dir string) ([]string, []string) {
		// A claude of its own on PATH, never started (the refusal comes first): the row
		// does not depend on the real CLI being installed.
		stub := t.TempDir()
		must(t, os.WriteFile(filepath.Join(stub, "claude"), []byte("#!/bin/sh\nexit 3\n"), 0o755))
		path := "PATH=" + stub + string(filepath.ListSeparator) + os.Getenv("PATH")
		return []string{"loop", "--no-sandbox", "--no-preflight", "--agent", "claude"}, []string{"ANTHROPIC_BASE_URL=ftp://x", path}
	}, `the model gateway: .*"ftp://x" is not an http\(s\) URL \(loop.prices, the anthropic base URL .*\): correct it`},
	{"inside the loop's sandbox", func(t *testing.T, dir string) ([]string, []string) {
		return []string{"loop", "--no-sandbox"}, []string{"HGATE_LOOP_SOCKET=" + filepath.Join(dir, "no.sock")}
	}, `a loop does not start inside another \(HGATE_LOOP_SOCKET\): run hgate loop outside`},
	{"a journal that does not parse", func(t *testing.T, dir string) ([]string, []string) {
		must(t, os.WriteFile(journalOf(t, dir), []byte("{\n"), 0o644))
		return []string{"loop", "--no-sandbox", "--resume"}, nil
	}, `\(\S+/journal.json\): start a new run with hgate loop \(without --resume\)$`},
	{"a resume hgate cannot check", func(t *testing.T, dir string) ([]string, []string) {
		j := journalOf(t, dir)
		data, err := os.ReadFile(j)
		must(t, err)
		must(t, os.WriteFile(j, bytes.Replace(data, []byte(`"next": 2,`), []byte(`"next": 0,`), 1), 0o644))
		return []string{"loop", "--no-sandbox", "--resume"}, nil
	}, `cannot be resumed: next: 0 .* \(\S+/journal.json\): check hgate state log`},
}

// TestLoopRefusals runs the built hgate once per refusal and checks its stderr's shape, its
// exit code (2, whatever the refusal) and that nothing was committed.
func TestLoopRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hgate and runs a loop iteration")
	}
	bin, env := refusalBinaries(t)
	base := refusalFixture(t, bin, env)
	commits := git(t, base, "rev-list", "--count", "HEAD")
	for _, row := range refusals {
		t.Run(row.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "repo")
			if out, err := exec.Command("cp", "-a", base, dir).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v\n%s", err, out)
			}
			args, extra := row.setup(t, dir)
			cmd := exec.Command(filepath.Join(bin, "hgate"), args...)
			cmd.Dir, cmd.Env = dir, append(append([]string{}, env...), extra...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Errorf("exit: %v, want 2", err)
			}
			checkRefusal(t, stderr.String(), row.want)
			if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
				if n := git(t, dir, "rev-list", "--count", "HEAD"); n != commits {
					t.Errorf("%s commits on HEAD after a refusal, want %s", n, commits)
				}
			}
		})
	}
}

// checkRefusal checks that stderr holds a refusal matching want and that every line of
// hgate's own (not a warning, not the loop's log) has the refusals' shape.
func checkRefusal(t *testing.T, stderr, want string) {
	t.Helper()
	re := regexp.MustCompile(want)
	found := false
	for line := range strings.Lines(stderr) {
		line = strings.TrimRight(line, "\n")
		if !strings.HasPrefix(line, "hgate: ") || strings.HasPrefix(line, "hgate: warning:") {
			continue
		}
		if !refusalShape.MatchString(line) {
			t.Errorf("not in the refusals' shape: %s", line)
		}
		found = found || re.MatchString(line)
	}
	if !found {
		t.Errorf("no refusal matching %q in:\n%s", want, stderr)
	}
}

// refusalBinaries is the folder of hgate and hgate-sandbox (HGATE_UNDER_TEST's, else
// built) and the hermetic environment they run in.
func refusalBinaries(t *testing.T) (string, []string) {
	bin := scriptBinaries(t)
	if under := os.Getenv("HGATE_UNDER_TEST"); under != "" {
		bin = filepath.Dir(under)
	}
	home, tmp := t.TempDir(), t.TempDir()
	env := []string{"PATH=" + bin + string(filepath.ListSeparator) + os.Getenv("PATH"),
		"HOME=" + home, "TMPDIR=" + tmp, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=agent@example.com", "GIT_AUTHOR_DATE=2026-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=agent@example.com", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
		"NO_COLOR=1"}
	return bin, env
}

// refusalFixture makes the repository every row copies: committed, prepared, with one
// finished run (for the resume rows) and the other configurations the rows name.
func refusalFixture(t *testing.T, bin string, env []string) string {
	dir := filepath.Join(t.TempDir(), "base")
	must(t, os.MkdirAll(dir, 0o755))
	cfg := "allow: [agent.sh]\nbenchmark:\n  tasks: {file: tasks.txt}\n  run: [\"sh\", \"check.sh\", \"{task}\"]\n" +
		"split: {test_fraction: 0.5}\nloop:\n  agent: [\"sh\", \"bot.sh\"]\n  attempt_timeout: 20s\n  repair_attempts: 0\n"
	files := map[string]string{
		".gitignore":  "/workspace/\n/PROGRAM.md\n",
		"PROGRAM.md":  "# Program\nMake every task pass.\n",
		"hgate.yaml":  cfg,
		"bad.yaml":    "concurency: 2\n" + cfg,
		"net.yaml":    cfg + "  sandbox:\n    network: model\n",
		"hidden.yaml": cfg + "  sandbox:\n    hidden: [secret.txt]\n",
		"secret.txt":  "the answers\n",
		"tasks.txt":   "b1\nb2\nb3\nb4\n",
		"check.sh":    "out=$(sh agent.sh \"$1\")\n[ \"$out\" = \"solved $1\" ]\n",
		"agent.sh":    "exit 0\n",
		"bot.sh":      "echo 'echo \"solved $1\"' > agent.sh\n",
	}
	for name, text := range files {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "init")
	for _, args := range [][]string{{"prepare"}, {"loop", "--no-sandbox", "--iterations", "1"}} {
		cmd := exec.Command(filepath.Join(bin, "hgate"), args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hgate %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}

// journalOf is the journal of the fixture's one run in dir.
func journalOf(t *testing.T, dir string) string {
	js, err := filepath.Glob(filepath.Join(dir, "workspace", "runs", "*", "journal.json"))
	must(t, err)
	if len(js) != 1 {
		t.Fatalf("journals: %v, want one", js)
	}
	return js[0]
}

// plain is a row whose condition is in its arguments alone.
func plain(args ...string) func(*testing.T, string) ([]string, []string) {
	return func(*testing.T, string) ([]string, []string) { return args, nil }
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=Agent", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=Agent", "GIT_COMMITTER_EMAIL=a@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString(text)
	must(t, errors.Join(err, f.Close()))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
