package loop_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/shimtest"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/lock"
	"github.com/hgate/hgate/loop"
	"github.com/hgate/hgate/mcpserver"
	"github.com/hgate/hgate/record"
)

// TestMain lets the test binary play hgate loop in a child process, so the
// kill test can SIGKILL it without killing the test.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == "hgate-mcp" {
		os.Exit(mcpserver.Main(os.Args[1:])) // the test binary linked as hgate-mcp (activate_cli_test.go)
	}
	if dir := os.Getenv("HGATE_LOOP_CHILD"); dir != "" {
		os.Exit(child(dir, os.Getenv("HGATE_LOOP_RESUME") == "1"))
	}
	shimtest.Install()        // the agents' and tasks' shim: hgate-sandbox as installed, not this test binary
	shimtest.InstallGateway() // the model gateway the loop starts, as installed
	removeTemp := gittest.MemoryTemp()
	code := m.Run()
	gittest.RemoveTemplates()
	removeTemp()
	os.Exit(code)
}

func child(dir string, resume bool) int {
	env, err := openEnv(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// The child takes the repository lock and nothing more: the loop itself removes the
	// ref lock files a killed round left (TestStaleRefLocks).
	lockRepo := func(ctx context.Context) (func(), error) {
		l, err := lock.Acquire(ctx, filepath.Join(env.Repo.CommonDir(), "hgate.lock"), lock.Options{Wait: true, Command: "loop"})
		if err != nil {
			return nil, err
		}
		return func() { l.Release() }, nil
	}
	_, err = loop.Run(context.Background(), loop.Options{Env: env, Loop: env.Config.Loop, Resume: resume, Log: os.Stderr, Grace: 100 * time.Millisecond, Lock: lockRepo})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}

func openEnv(dir string) (*gate.Env, error) {
	repo, err := gitguard.Open(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := gate.LoadConfig(repo, config.FileName, io.Discard)
	if err != nil {
		return nil, err
	}
	return &gate.Env{Config: cfg, Repo: repo}, nil
}

// commitAndPrepare commits r's files as "init" and takes hgate's baseline of it.
func commitAndPrepare(t testing.TB, r *gittest.Repo) *gittest.Repo {
	t.Helper()
	r.Commit("init")
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Prepare(context.Background(), env); err != nil {
		t.Fatalf("prepare: %v", err)
	}
	return r
}

// project is a small repository whose bot agent, by iteration, solves more
// tasks, cheats, breaks the agent, or does nothing.
func project(t testing.TB) *gittest.Repo {
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
  agent: ["sh", "bot.sh"]
  attempt_timeout: 5m
  iterations: 6
  patience: 0
  repair_attempts: 1
`,
		"tasks.txt": "b1\nb2\nb3\nb4\n",
		"check.sh":  "out=$(sh agent.sh \"$1\")\n[ \"$out\" = \"solved $1\" ]\n",
		"agent.sh":  "case $1 in b1) echo \"solved $1\" ;; esac\n",
		"bot.sh": `n=$HGATE_ITERATION
echo HGATE_COST_USD=0.01
sleep 0.0$n
case $n in
1) echo 'case $1 in b1|b2) echo "solved $1" ;; esac' > agent.sh ;;
2) echo 'exit 0' > check.sh; echo x > new.txt ;;
3) echo 'echo no' > agent.sh ;;
4) echo 'echo "solved $1"' > agent.sh; echo "solve all" > "$HGATE_MESSAGE_FILE" ;;
5) ;;
6) echo '# same' >> agent.sh ;;
esac
`,
	})
	return commitAndPrepare(t, r)
}

var killSeeds = flag.Int("kill.seeds", 1, "TestKillAndResume: how many seeded kill campaigns to run (seeds 1..N)")

// killPoints are the HGATE_FAULT points a kill campaign's round may also die at, before
// its timed kill: the agent running, ended with the journal not told, a resume's closing
// of the killed agent's phase, and inside the gate and the record ("": none).
var killPoints = []string{"", "", "loop-agent-attempt", "loop-agent-attempt-ended", "loop-agent-resumed",
	"gate-scored", "record-applied", "ledger-recorded", "ref-locked:refs/hgate/gated"}

// TestKillAndResume kills the loop with SIGKILL at seeded random moments, or at a seeded
// HGATE_FAULT point reached before, resumes it each time, and checks that results.tsv,
// the gated commits, the attempt refs, learnings.md and summary.json (its spend: what
// the agents reported, once each) agree once it has finished. The test command runs one
// campaign; -args -kill.seeds=N runs more (README, Development).
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("a kill campaign: kills and resumes the loop several times")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= int64(*killSeeds); seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			// The points come from a stream of their own: a seed's moments stay what they were.
			points := rand.New(rand.NewSource(-seed))
			r := project(t)
			start := r.Head()
			// A run is killed a seeded number of times at seeded moments, then left to
			// finish: how far it gets before each kill depends on the machine's speed
			// (the race detector slows it a lot), its ending must not.
			maxKills := 4 + rng.Intn(5)
			kills := 0
			for round := 0; ; round++ {
				point := killPoints[points.Intn(len(killPoints))]
				if kills == maxKills {
					point = ""
				}
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(gittest.Env(), "HGATE_LOOP_CHILD="+r.Dir, fmt.Sprintf("HGATE_LOOP_RESUME=%d", min(round, 1)), fault.Env+"="+point)
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				killAt := time.Duration(rng.Intn(500)) * time.Millisecond
				if kills == maxKills {
					killAt = 10 * time.Minute // the last round runs to its end
				}
				select {
				case err := <-done:
					if killedAtPoint(err) {
						t.Logf("round %d: killed at %s", round, point)
						kills++
						continue
					}
					if err != nil {
						t.Fatalf("round %d: %v\n%s", round, err, out.String())
					}
					t.Logf("finished after %d kill(s)", kills)
					consistent(t, r, start)
					return
				case <-time.After(killAt):
					_ = cmd.Process.Signal(syscall.SIGKILL)
					<-done
					kills++
				}
			}
		})
	}
}

// killedAtPoint: the child killed itself at its HGATE_FAULT point.
func killedAtPoint(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

func consistent(t *testing.T, r *gittest.Repo, start string) {
	t.Helper()
	runs, _ := filepath.Glob(r.Path("workspace/runs/*/summary.json"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	data, err := os.ReadFile(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	var s loop.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.StopReason != loop.StopIterations || len(s.Iterations) != 6 {
		t.Fatalf("summary: stop %q after %d iterations", s.StopReason, len(s.Iterations))
	}
	var kept, attempts []string
	for i, it := range s.Iterations {
		if it.Iteration != i+1 {
			t.Errorf("iteration %d numbered %d", i+1, it.Iteration)
		}
		switch it.Outcome {
		case "kept":
			kept = append(kept, it.Commit[:7])
		case "rejected":
			attempts = append(attempts, fmt.Sprintf("refs/hgate/attempts/%s/%d", s.RunID, it.Iteration))
		}
	}
	rows, err := record.Load(r.Path("workspace/results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	var recorded []string
	for _, row := range rows[1:] {
		recorded = append(recorded, row.Commit)
	}
	log := strings.Fields(r.Git("log", "--format=%h", "--abbrev=7", start+"..HEAD"))
	sort.Sort(sort.Reverse(sort.StringSlice(log)))
	sortedKept := append([]string(nil), kept...)
	sort.Sort(sort.Reverse(sort.StringSlice(sortedKept)))
	if fmt.Sprint(recorded) != fmt.Sprint(kept) || fmt.Sprint(log) != fmt.Sprint(sortedKept) {
		t.Errorf("results.tsv %v, kept %v, commits %v", recorded, kept, log)
	}
	refs := strings.Fields(r.Git("for-each-ref", "--format=%(refname)", "refs/hgate/attempts"))
	if fmt.Sprint(refs) != fmt.Sprint(attempts) {
		t.Errorf("attempt refs %v, rejected iterations %v", refs, attempts)
	}
	if got := strings.TrimSpace(r.Git("rev-parse", "refs/hgate/gated")); got != r.Head() {
		t.Errorf("refs/hgate/gated %s, HEAD %s", got, r.Head())
	}
	if st := r.Git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("worktree not clean:\n%s", st)
	}
	// Every attempt's spend is counted once, a killed one's too: the run's spend is what
	// its agents' outputs say, and the last iteration's cumulative spend is the run's.
	outs, _ := filepath.Glob(r.Path("workspace/runs/*/iterations/*/agent.stdout"))
	repairs, _ := filepath.Glob(r.Path("workspace/runs/*/iterations/*/repair-*/agent.stdout"))
	reported := 0
	for _, f := range append(outs, repairs...) {
		data, _ := os.ReadFile(f)
		reported += strings.Count(string(data), "HGATE_COST_USD=0.01")
	}
	if want := math.Round(float64(reported)) / 100; s.SpendUSD != want || s.Iterations[5].CumulativeUSD != want {
		t.Errorf("spend $%v, last cumulative $%v; the agents reported $%v", s.SpendUSD, s.Iterations[5].CumulativeUSD, want)
	}
	l, _ := os.ReadFile(r.Path("workspace/learnings.md"))
	if n := strings.Count(string(l), "\n## Iteration "); n != 6 {
		t.Errorf("learnings.md has %d entries, want 6", n)
	}
}

// TestStaleRefLocks leaves the ref lock files a round killed mid-write leaves, then
// starts and resumes the loop with a Lock that only takes the repository lock: the loop
// itself removes them under the lock before it reads or moves a ref. (Before, only
// cmd/hgate's lock removed them; a caller without it failed with go-git's "ref file is
// empty" or "gated.lock exists", the kill test's occasional failure before its child
// broke the locks itself.)
func TestStaleRefLocks(t *testing.T) {
	r := project(t)
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lockRepo := func(ctx context.Context) (func(), error) {
		l, err := lock.Acquire(ctx, filepath.Join(env.Repo.CommonDir(), "hgate.lock"), lock.Options{Wait: true})
		if err != nil {
			return nil, err
		}
		return func() { l.Release() }, nil
	}
	stale := []string{"ledger", "gated", "best"}
	for i, resume := range []bool{false, true} {
		// A kill between creating a lock and writing it leaves it empty (go-git's listing
		// of refs then fails); after writing, it holds the new value (the next move fails).
		for _, n := range stale {
			data := []byte(nil)
			if n == "gated" {
				data = []byte(r.Head() + "\n")
			}
			if err := os.WriteFile(r.Path(".git/refs/hgate/"+n+".lock"), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cfg := env.Config.Loop
		cfg.Iterations = 2 + 2*i
		s, err := loop.Run(context.Background(), loop.Options{Env: env, Loop: cfg, Resume: resume, Grace: 100 * time.Millisecond, Lock: lockRepo})
		if err != nil {
			t.Fatalf("resume %v: %v", resume, err)
		}
		if len(s.Iterations) != cfg.Iterations || s.Kept == 0 {
			t.Fatalf("resume %v: %d iterations, %d kept", resume, len(s.Iterations), s.Kept)
		}
		for _, n := range stale {
			if _, err := os.Stat(r.Path(".git/refs/hgate/" + n + ".lock")); err == nil {
				t.Errorf("resume %v: %s.lock is left", resume, n)
			}
		}
	}
}
