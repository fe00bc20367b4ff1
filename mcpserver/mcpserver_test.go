package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/shimtest"
)

// TestMain puts the hgate binary the tools run, and the sandbox shim it starts its tasks
// through, as installed, into a folder on PATH, where hgate-mcp looks for hgate when it is
// not next to its own executable.
func TestMain(m *testing.M) {
	if kind := os.Getenv("SMOKE_TEST_SERVER"); kind == "proxy" {
		os.Exit(proxyTestServer(os.Stdin, os.Stdout))
	} else if kind != "" {
		os.Exit(smokeTestServer(kind))
	}
	os.Exit(func() int {
		bin, err := os.MkdirTemp("", "mcpserver-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		defer os.RemoveAll(bin)
		for _, name := range []string{"hgate", "hgate-sandbox"} {
			if err := shimtest.Build(filepath.Join(bin, name), "github.com/hgate/hgate/cmd/"+name); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
		os.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		return m.Run()
	}())
}

// exitProject is a project whose agent.sh passes the tasks its case names.
const exitProject = `allow: [agent.sh]
benchmark:
  tasks: {file: tasks.txt}
  run: ["sh", "-c", "sh agent.sh {task}"]
  concurrency: 2
  task_timeout: 1m
`

// hgate is the hgate binary TestMain built, found as hgate-mcp finds it.
func hgate(t *testing.T) string {
	t.Helper()
	path, err := proc.Sibling("hgate")
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// mcpRepo is a prepared repository whose agent solves t01..t05 of ten tasks.
func mcpRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	repo := gittest.New(t)
	repo.WriteFiles(map[string]string{
		"hgate.yaml": exitProject,
		".gitignore": "/workspace/\n",
		"tasks.txt":  "t01\nt02\nt03\nt04\nt05\nt06\nt07\nt08\nt09\nt10\n",
		"agent.sh":   "case $1 in t0[1-5]) exit 0;; esac; exit 1\n",
	})
	repo.Commit("init")
	if out, err := exec.Command(hgate(t), "-C", repo.Path("."), "prepare").CombinedOutput(); err != nil {
		t.Fatalf("prepare: %v\n%s", err, out)
	}
	return repo
}

// connect starts New(exec) and an SDK client on in-memory transports.
func connect(t *testing.T, exec Exec) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New("test", exec).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type toolAnswer struct {
	text       string
	structured map[string]any
	isError    bool
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) toolAnswer {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var a toolAnswer
	a.isError = res.IsError
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			a.text += tc.Text
		}
	}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &a.structured); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, data, err)
		}
	}
	return a
}

func TestMCPTools(t *testing.T) {
	repo := mcpRepo(t)
	cs := connect(t, Child(hgate(t), repo.Path("."), ""))

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	if want := []string{"bench", "gate", "guard", "status"}; !slices.Equal(names, want) {
		t.Fatalf("tools %q, want %q", names, want)
	}

	a := call(t, cs, "guard", nil)
	if a.isError || a.text != "clean: only allowed paths changed\n" || a.structured["ok"] != true {
		t.Errorf("guard on a clean tree: %+v", a)
	}
	repo.Write("stray.txt", "x\n")
	a = call(t, cs, "guard", nil)
	wantText := "untracked  stray.txt  (revert: rm stray.txt)\nhgate: 1 path(s) changed outside allow in hgate.yaml\nhgate guard: exit status 1 (the answer is no)\n"
	if a.isError || a.text != wantText || a.structured["ok"] != false {
		t.Errorf("guard with a stray file: %+v\nwant text %q", a, wantText)
	}
	a = call(t, cs, "gate", map[string]any{"fail_fast": true})
	if a.isError || a.structured["verdict"] != "reject" || !strings.Contains(a.text, "REJECTED") {
		t.Errorf("gate with a stray file: %+v", a)
	}
	repo.Remove("stray.txt")

	repo.Write("agent.sh", "case $1 in t0[1-8]) exit 0;; esac; exit 1\n")
	a = call(t, cs, "gate", nil)
	if a.isError || a.structured["verdict"] != "pass" || !strings.Contains(a.text, "[gate] PASSED") {
		t.Errorf("gate on a better agent: %+v", a)
	}
	a = call(t, cs, "bench", map[string]any{"tasks": []string{"nope"}})
	if !a.isError || a.structured["exit"] != float64(2) || !strings.Contains(a.structured["error"].(string), `task "nope" is not a train task`) ||
		!strings.Contains(a.text, "exit status 2 (could not answer)") {
		t.Errorf("bench of an unknown task: %+v", a)
	}
	a = call(t, cs, "bench", nil)
	if a.isError || !strings.Contains(a.text, "train tasks passed\n") || a.structured["total"] == nil {
		t.Errorf("bench: %+v", a)
	}
	a = call(t, cs, "status", nil)
	if a.isError || a.structured["best_val_score"] == nil || !strings.Contains(a.text, "allow: agent.sh\n") {
		t.Errorf("status: %+v", a)
	}
}

// Inside the loop's sandbox the tools go through the socket, which the loop
// answers: status from its callback, gate by running the command.
func TestMCPThroughSocket(t *testing.T) {
	repo := mcpRepo(t)
	root := repo.Path(".")
	srv, err := agentapi.Listen(context.Background(), agentapi.Options{
		// The loop runs the command itself, outside the sandbox (not through its socket).
		Exec: func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
			cmd := exec.CommandContext(ctx, hgate(t), append([]string{"-C", root}, args...)...)
			cmd.Env = append(os.Environ(), agentapi.EnvSocket+"=")
			cmd.Stdout, cmd.Stderr = stdout, stderr
			cmd.Run()
			return cmd.ProcessState.ExitCode()
		},
		Status: func() (agentapi.Status, error) {
			return agentapi.Status{Iteration: 2, RunID: "r", SuiteSize: 1, Allow: []string{"agent.sh"}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	t.Setenv(agentapi.EnvSocket, srv.Path())
	// -C points nowhere useful: through the socket, the loop's repository is used.
	cs := connect(t, Child(hgate(t), t.TempDir(), ""))

	a := call(t, cs, "status", nil)
	if a.isError || a.structured["iteration"] != 2.0 || !strings.HasPrefix(a.text, "iteration 2 of run r\n") {
		t.Errorf("status: %+v", a)
	}
	a = call(t, cs, "gate", nil)
	if a.isError || a.structured["verdict"] != "pass" {
		t.Fatalf("gate: %+v", a)
	}
	srv.Close()
	a = call(t, cs, "guard", nil)
	if !a.isError || !strings.Contains(a.text, "hgate: cannot reach the loop's socket") {
		t.Errorf("guard with the loop gone: %+v", a)
	}
}
