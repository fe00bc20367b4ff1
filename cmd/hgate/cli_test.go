package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/gittest"
)

const exitProject = `allow: [agent.sh]
benchmark:
  tasks: {file: tasks.txt}
  run: ["sh", "-c", "sh agent.sh {task}"]
  concurrency: 2
  task_timeout: 1m
`

// TestExitCodes pins the exit-code table of the README: 0 done/passed, 1 the answer is
// no, 2 could not answer, 130 interrupted.
func TestExitCodes(t *testing.T) {
	repo := gittest.New(t)
	repo.WriteFiles(map[string]string{
		"hgate.yaml": exitProject,
		".gitignore": "/workspace/\n",
		"tasks.txt":  "t1\nt2\nt3\nt4\n",
		"agent.sh":   "case $1 in t1|t3) exit 0;; esac; exit 1\n",
	})
	repo.Commit("init")
	dir := repo.Path(".")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name   string
		ctx    context.Context
		args   []string
		edit   func()
		want   int
		stderr string
	}{
		{name: "help", args: []string{"--help"}, want: 0},
		{name: "version", args: []string{"--version"}, want: 0},
		{name: "unknown command", args: []string{"bogus"}, want: 2, stderr: `hgate: unexpected argument bogus`},
		{name: "unknown flag", args: []string{"gate", "--bogus"}, want: 2, stderr: "hgate: unknown flag --bogus"},
		{name: "not a repository", args: []string{"-C", t.TempDir(), "gate"}, want: 2, stderr: "hgate: "},
		{name: "gate before prepare", args: []string{"-C", dir, "gate"}, want: 2, stderr: "run hgate prepare"},
		{name: "prepare interrupted", ctx: cancelled, args: []string{"-C", dir, "prepare"}, want: 130, stderr: "hgate: interrupted"},
		{name: "prepare", args: []string{"-C", dir, "prepare"}, want: 0},
		{name: "gate passes", args: []string{"-C", dir, "gate"}, want: 0},
		{name: "gate interrupted", ctx: cancelled, args: []string{"-C", dir, "gate"}, want: 130, stderr: "hgate: interrupted"},
		{name: "gate rejects", args: []string{"-C", dir, "gate"}, edit: func() { repo.Write("tasks.txt", "t1\n") }, want: 1},
		{name: "record refuses", args: []string{"-C", dir, "record"}, edit: func() { repo.Commit("forbidden") }, want: 1, stderr: "was not gated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.edit != nil {
				tt.edit()
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			var stdout, stderr bytes.Buffer
			got := run(ctx, tt.args, &stdout, &stderr)
			if got != tt.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tt.want, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Fatalf("stderr %q does not contain %q", stderr.String(), tt.stderr)
			}
		})
	}
}

// TestVersionFrom: --version names the release, or the commit a checkout was built from and
// whether it had uncommitted changes, never a bare "devel" when git information is there.
func TestVersionFrom(t *testing.T) {
	vcs := func(rev, modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Path: "github.com/hgate/hgate", Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.time", Value: "2026-11-24T05:56:40Z"}, {Key: "vcs.modified", Value: modified}}}
	}
	tests := []struct {
		name, linked string
		bi           *debug.BuildInfo
		want         string
	}{
		{"release", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}, "v1.4.0"},
		{"checkout pseudo-version", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261124055640-51c8428978d6+dirty"}}, "v0.0.0-20261124055640-51c8428978d6+dirty"},
		{"revision, clean", "", vcs("51c8428978d61cdea77c408935c8f4e38380eb8d", "false"), "devel 51c8428978d6 (2026-11-24T05:56:40Z)"},
		{"revision, dirty", "", vcs("51c8428978d61cdea77c408935c8f4e38380eb8d", "true"), "devel 51c8428978d6-dirty (2026-11-24T05:56:40Z)"},
		{"linked", "v2.0.0-rc1", vcs("51c8428978d61cdea77c408935c8f4e38380eb8d", "true"), "v2.0.0-rc1"},
		{"nothing", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel (built without VCS information: -buildvcs=false, or from a git worktree, which go build does not stamp)"},
	}
	for _, tt := range tests {
		if got := versionFrom(tt.linked, tt.bi); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestReachableKnowsTheGlobalFlags: reachable skips the value of each global flag that
// takes one, as Kong's model of them says, so a value named like a command (-C gate) is
// not taken for the command.
func TestReachableKnowsTheGlobalFlags(t *testing.T) {
	var c cli
	parser, err := kong.New(&c, kong.Name("hgate"), kong.Exit(func(int) {}))
	if err != nil {
		t.Fatal(err)
	}
	shorts := ""
	for _, f := range parser.Model.Flags {
		value := !f.IsBool()
		if got := takesValue("--" + f.Name); got != value {
			t.Errorf("takesValue(--%s) = %v; Kong: the flag takes a value = %v", f.Name, got, value)
		}
		if f.Short == 0 {
			continue
		}
		if got := takesValue("-" + string(f.Short)); got != value {
			t.Errorf("takesValue(-%c) = %v; Kong: the flag takes a value = %v", f.Short, got, value)
		}
		if !value {
			shorts += string(f.Short)
		}
	}
	if len(shorts) != len(boolShorts) || strings.Trim(shorts, boolShorts) != "" {
		t.Errorf("Kong's short flags without a value are %q; boolShorts says %q", shorts, boolShorts)
	}
	for _, a := range []string{"-vC", "-hvC"} {
		if !takesValue(a) {
			t.Errorf("takesValue(%s) = false: C ends the cluster, the value follows", a)
		}
	}
	for _, a := range []string{"-C/tmp/C", "--directory=/tmp", "--config=x", "-vh"} {
		if takesValue(a) {
			t.Errorf("takesValue(%s) = true: no value follows", a)
		}
	}
}

// TestReachableParsesAsEveryCommand: run with Kong's model of only the commands the
// command line can reach prints, exits and runs exactly as with the model of all of
// them.
func TestReachableParsesAsEveryCommand(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{}, {"--help"}, {"-h"}, {"--version"}, {"--json"}, {"--version", "--json"},
		{"-C", dir, "--version"}, {"--directory=" + dir, "--version"}, {"-vC", dir, "--version"},
		{"--version", "bogus"}, {"bogus", "--version"}, {"bogus"}, {"gaurd"}, {"--json", "bogus"},
		{"guard", "--help"}, {"state"}, {"state", "--help"}, {"state", "log", "--help"},
		{"hooks"}, {"hooks", "run", "--help"}, {"loop", "--help"}, {"completion"},
		{"-C", "guard", "--help"}, {"-C", "gate", "guard", "--help"}, {"--config", "gate", "gate", "--help"},
		{"-v", "guard", "--help"}, {"guard", "--bogus"}, {"-C", dir, "guard"}, {"-C", dir, "status", "--json"},
		{"-C", dir, "--", "guard"}, {"-C"}, {"--config"}, {"-C" + dir, "guard"},
	} {
		var pruned, every [2]bytes.Buffer
		got := runWith(context.Background(), args, &pruned[0], &pruned[1], false)
		want := runWith(context.Background(), args, &every[0], &every[1], true)
		if got != want || pruned[0].String() != every[0].String() || pruned[1].String() != every[1].String() {
			t.Errorf("hgate %q: exit %d, stdout %q, stderr %q\nwith every command's model: exit %d, stdout %q, stderr %q",
				args, got, pruned[0].String(), pruned[1].String(), want, every[0].String(), every[1].String())
		}
	}
}

// TestSignalsCaughtWhereACommandStopsCleanly: run catches SIGINT and SIGTERM (exit 130,
// state files as they were) for exactly the commands that take a context and stop on
// it; the others (they read, or write atomically) are ended by the signal, as git's are.
func TestSignalsCaughtWhereACommandStopsCleanly(t *testing.T) {
	want := map[string]bool{
		"prepare": true, "bench": true, "gate": true, "record": true, "loop": true, "mcp": true, "qualify": true, "final": true,
		"state restore": true, "state accept": true, "state rebase": true,
		"state log": false, "check": true, "guard": false, "status": true, "report": true, "completion": false, // status and report may record a look at the final split in the ledger
		"harness list": false, "hooks install": false, "hooks uninstall": false, "hooks run": false,
	}
	var c cli
	var options []kong.Option
	for _, cmd := range c.commands() {
		options = append(options, kong.DynamicCommand(cmd.name, cmd.help, "", cmd.cmd))
	}
	parser, err := kong.New(&c, options...)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, node := range parser.Model.Leaves(false) {
		path := node.Path()
		stops, ok := want[path]
		if !ok {
			t.Errorf("hgate %s: not in this test: does it stop cleanly on SIGINT?", path)
			continue
		}
		seen++
		if got := takesContext(node); got != stops {
			t.Errorf("hgate %s: signals caught = %v, want %v", path, got, stops)
		}
	}
	if seen != len(want) {
		t.Errorf("saw %d of the %d commands this test names", seen, len(want))
	}
}

// TestPreflightDefault pins when a loop starts its agent once first (docs/guide/loop.md,
// The preflight): on for a preset, off for a command line of the user's own, as
// --preflight and --no-preflight say, and never with --resume.
func TestPreflightDefault(t *testing.T) {
	on, off := true, false
	for _, tc := range []struct {
		agent     string
		preflight *bool
		resume    bool
		want      bool
	}{
		{agent: "claude", want: true},
		{agent: "codex", want: true},
		{agent: "aider", want: true},
		{agent: "sh agent.sh", want: false},
		{agent: "sh agent.sh", preflight: &on, want: true},
		{agent: "claude", preflight: &off, want: false},
		{agent: "claude", resume: true, want: false},
		{agent: "sh agent.sh", preflight: &on, resume: true, want: false},
	} {
		c := loopCmd{Preflight: tc.preflight, Resume: tc.resume}
		if got := c.preflight(config.Loop{Agent: []string{tc.agent}}); got != tc.want {
			t.Errorf("agent %q, --preflight %v, --resume %v: preflight %v, want %v", tc.agent, fmtFlag(tc.preflight), tc.resume, got, tc.want)
		}
	}
}

// fmtFlag is a negatable flag as given: unset, true or false.
func fmtFlag(b *bool) string {
	if b == nil {
		return "unset"
	}
	return strconv.FormatBool(*b)
}
