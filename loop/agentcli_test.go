package loop_test

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/agentout"
	"github.com/hgate/hgate/internal/gittest"
)

// stubCLI is an agent CLI the loop has never heard of, added the way a new adapter is
// added: one type registering itself. Its command line, its resume, its environment, its
// home folder and its output format are all its own, so the loop can only get them right
// through the adapter.
type stubCLI struct{ agentcli.Base }

func (stubCLI) Name() string { return "stubcli" }

// Args: the script solves b1 and b2 when resumed, and breaks b1 on a fresh
// session (the gate rejects its regression, and the repair resumes the session).
func (stubCLI) Args() []string {
	return []string{"sh", "-c", `
echo "$STUBCLI_MODE" > "$HOME/.stubcli/seen"
echo "stubcli: session=S$HGATE_ITERATION spent=0.25"
if [ "$1" = "--continue" ]; then
  echo 'case $1 in b1|b2) echo "solved $1" ;; esac' > agent.sh
  echo "continued $2" > "$HGATE_MESSAGE_FILE"
else
  echo 'echo no' > agent.sh
fi`, "stubcli"}
}

func (stubCLI) Resume(args []string, id string) ([]string, bool) {
	return append(append([]string{}, args...), "--continue", id), true
}

func (stubCLI) Env(sandboxed bool, tmp string) []string { return []string{"STUBCLI_MODE=on"} }

func (stubCLI) Writable() []string { return []string{"~/.stubcli/"} }

// Parse reads its own line: "stubcli: session=<id> spent=<usd>".
func (stubCLI) Parse(r io.Reader) (agentout.Run, error) {
	var run agentout.Run
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "stubcli: ")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "session":
				run.SessionID = v
			case "spent":
				usd, err := strconv.ParseFloat(v, 64)
				if err == nil {
					run.CostUSD = &usd
				}
			}
		}
		run.Format, run.Final = agentout.FormatLines, true
	}
	return run, sc.Err()
}

// TestNewAgentIsOneFile: an adapter registered from one file is driven through the loop's
// own code path: its command line runs, its environment reaches it, its home folder is
// opened in the sandbox, its repair resumes its session its way, and what it spent and
// its session are read by its own parser.
func TestNewAgentIsOneFile(t *testing.T) {
	agentcli.Register(stubCLI{})
	t.Setenv("HOME", t.TempDir())
	r := gittest.New(t)
	r.WriteFiles(map[string]string{
		".gitignore": "/workspace/\n",
		"PROGRAM.md": "# Program\n",
		"hgate.yaml": `allow: [agent.sh]
benchmark:
  tasks: {file: tasks.txt}
  run: ["sh", "check.sh", "{task}"]
  concurrency: 2
split: {test_fraction: 0.5}
loop:
  agent: stubcli
  attempt_timeout: 5m
  patience: 0
  repair_attempts: 1
`,
		"tasks.txt": "b1\nb2\nb3\nb4\n",
		"check.sh":  "out=$(sh agent.sh \"$1\")\n[ \"$out\" = \"solved $1\" ]\n",
		"agent.sh":  "case $1 in b1) echo \"solved $1\" ;; esac\n",
	})
	s, log := runGen(t, commitAndPrepare(t, r), 1, false)
	if len(s.Iterations) != 1 {
		t.Fatalf("iterations: %+v\n%s", s.Iterations, log)
	}
	it := s.Iterations[0]
	if it.Repairs != 1 || !it.NewBest || !strings.Contains(it.Message, "continued S1") {
		t.Errorf("the repair did not resume the stub's session its way: %+v\n%s", it, log)
	}
	if it.SessionID != "S1" || it.CostUSD == nil || *it.CostUSD != 0.5 {
		t.Errorf("the stub's own output was not read by its parser: session %q cost %v", it.SessionID, it.CostUSD)
	}
	if s.Sandbox == "off" {
		return // nothing opens its home folder: there is no sandbox to open it in
	}
	if data, err := os.ReadFile(filepath.Join(os.Getenv("HOME"), ".stubcli", "seen")); err != nil || string(data) != "on\n" {
		t.Errorf("the stub's environment or its home folder in the sandbox: %q %v", data, err)
	}
}
