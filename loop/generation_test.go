package loop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/loop"
	"github.com/hgate/hgate/record"
)

// genProject is a repository whose tasks t1..t8 pass by how many of w/a and w/b exist:
// an odd task needs one, an even task both. Each agent of a generation writes the file
// bot.sh gives its index, so two agents of one generation both improve over the base,
// and only the second one rebased onto the first's kept commit passes every task.
func genProject(t testing.TB, bot string, agents int) *gittest.Repo {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{
		".gitignore": "/workspace/\n",
		"PROGRAM.md": "# Program\n",
		"hgate.yaml": `allow: [w/]
benchmark:
  tasks: {file: tasks.txt}
  run: ["sh", "check.sh", "{task}"]
  concurrency: 2
split: {test_fraction: 0.5}
loop:
  agent: ["sh", "bot.sh"]
  attempt_timeout: 1m
  patience: 0
  repair_attempts: 0
  agents: ` + strconv.Itoa(agents) + "\n",
		"tasks.txt": "t1\nt2\nt3\nt4\nt5\nt6\nt7\nt8\n",
		"check.sh": `n=0
for f in w/a w/b; do [ -e "$f" ] && n=$((n+1)); done
i=${1#t}
[ $((i % 2)) -eq 1 ] && need=1 || need=2
[ $n -ge $need ]
`,
		"w/keep": "",
		"bot.sh": bot,
	})
	return commitAndPrepare(t, r)
}

// runGen runs the loop on r with its hgate.yaml, iterations as given.
func runGen(t testing.TB, r *gittest.Repo, iterations int, resume bool) (*loop.Summary, string) {
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lc := env.Config.Loop
	lc.Iterations = iterations
	if _, err := sandbox.Available(); err != nil {
		lc.Sandbox.Enabled = false
	}
	var log bytes.Buffer
	s, err := loop.Run(context.Background(), loop.Options{Env: env, Loop: lc, Log: &log, Grace: time.Second, Resume: resume})
	if err != nil {
		t.Fatalf("loop: %v\n%s", err, log.String())
	}
	t.Logf("sandbox: %s", s.Sandbox)
	return s, log.String()
}

// TestGenerationRace: two agents of one generation both improve over the same base; the
// first is kept, and the second is rebased onto the first's kept commit and gated
// against that new best, never against the base it saw.
func TestGenerationRace(t *testing.T) {
	r := genProject(t, `case $HGATE_AGENT_INDEX in
1) echo a > w/a; echo "agent one" > "$HGATE_MESSAGE_FILE" ;;
2) echo b > w/b; echo "agent two" > "$HGATE_MESSAGE_FILE"; echo "b helps even tasks" > "$HGATE_NOTES_FILE" ;;
esac
`, 2)
	base := r.Head()
	s, log := runGen(t, r, 2, false)
	if len(s.Iterations) != 2 || s.Kept != 2 || s.Generations != 1 {
		t.Fatalf("%d iterations, %d kept, %d generations; want 2, 2, 1\n%s", len(s.Iterations), s.Kept, s.Generations, log)
	}
	one, two := s.Iterations[0], s.Iterations[1]
	if one.Base != base || two.Base != base || one.ComparedWith != base || one.Rebased {
		t.Fatalf("iteration 1: base %s, compared with %s, rebased %v; want both %s, not rebased", one.Base, one.ComparedWith, one.Rebased, base)
	}
	if two.ComparedWith != one.Commit || !two.Rebased || two.AgentIndex != 2 {
		t.Fatalf("iteration 2 was gated against %s (rebased %v); want the first's kept commit %s", two.ComparedWith, two.Rebased, one.Commit)
	}
	if two.BestBefore == nil || one.ValScore == nil || *two.BestBefore != *one.ValScore || *two.ValScore != 1 {
		t.Fatalf("iteration 2: best before %v, val_score %v; want the first's %v, then 1", two.BestBefore, two.ValScore, one.ValScore)
	}
	var rep gate.Answer
	data, err := os.ReadFile(filepath.Join(r.Dir, "workspace", "runs", s.RunID, "iterations", "2", "gate.json"))
	if err != nil || json.Unmarshal(data, &rep) != nil || rep.Head != one.Commit {
		t.Fatalf("gate.json of iteration 2 names head %q; want %s (%v)", rep.Head, one.Commit, err)
	}
	rows, err := record.Load(filepath.Join(r.Dir, "workspace", "results.tsv"))
	if err != nil || len(rows) != 3 || rows[1].Commit != one.Commit[:7] || rows[2].Commit != two.Commit[:7] {
		t.Fatalf("results.tsv: %+v (%v); want the two kept commits in order", rows, err)
	}
	if parent := strings.TrimSpace(r.Git("rev-parse", two.Commit+"^")); parent != one.Commit {
		t.Fatalf("the second kept commit's parent is %s; want the first's %s", parent, one.Commit)
	}
	if msg := strings.TrimSpace(r.Git("log", "-1", "--format=%s", two.Commit)); msg != "agent two" {
		t.Fatalf("the second commit's message is %q; want the agent's own", msg)
	}
	learn, _ := os.ReadFile(filepath.Join(r.Dir, "workspace", "learnings.md"))
	if !bytes.Contains(learn, []byte("### Notes of agent 2, generation 1 (iteration 2)\n\nb helps even tasks")) {
		t.Fatalf("learnings.md lacks agent 2's notes:\n%s", learn)
	}
	if out := r.Git("worktree", "list"); strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("the agents' worktrees are left:\n%s", out)
	}
}

// TestGenerationConflict: two agents change the same line; the second no longer merges
// onto the first's kept commit and is set aside, rejected, with its reason. An earlier
// run's agent worktree is removed.
func TestGenerationConflict(t *testing.T) {
	r := genProject(t, `echo "agent $HGATE_AGENT_INDEX" > w/a
`, 2)
	// An earlier run's agent worktree, left by a run stopped mid-generation: a new run
	// removes it.
	stale := filepath.Join(r.Dir, ".git", "hgate", "agents", "20260101-000000", "1")
	r.Git("worktree", "add", "--detach", stale)
	s, log := runGen(t, r, 2, false)
	if _, err := os.Stat(filepath.Dir(stale)); err == nil || strings.Count(strings.TrimSpace(r.Git("worktree", "list")), "\n") != 0 {
		t.Fatalf("the earlier run's agent worktree is left (%v):\n%s", err, r.Git("worktree", "list"))
	}
	if len(s.Iterations) != 2 {
		t.Fatalf("%d iterations\n%s", len(s.Iterations), log)
	}
	one, two := s.Iterations[0], s.Iterations[1]
	want := "conflict with " + one.Commit[:7]
	if one.Outcome != loop.OutcomeKept || two.Outcome != loop.OutcomeRejected || len(two.Reasons) != 1 || two.Reasons[0] != want || two.Verdict != nil {
		t.Fatalf("outcomes %s, %s (%v, verdict %v); want kept, then rejected: %s, never gated\n%s", one.Outcome, two.Outcome, two.Reasons, two.Verdict, want, log)
	}
	ref := strings.TrimSpace(r.Git("rev-parse", two.AttemptRef))
	if out, err := r.TryGit("merge-base", "--is-ancestor", ref, "HEAD"); err == nil {
		t.Fatalf("the conflicting attempt %s is on the branch %s", ref, out)
	}
	if got := strings.TrimSpace(r.Git("show", ref+":w/a")); got != "agent 2" {
		t.Fatalf("the attempt holds w/a = %q; want the agent's", got)
	}
}

// BenchmarkAgents runs three attempts of stand-in agents that sleep 4 s each, with
// --agents 3 (one generation) and with --agents 1 (three iterations), and reports the
// wall time of the first against the second: the agents' sleeps overlap, the gates do
// not (target: at most 0.5). The sleep is long beside a gate (0.1-0.3 s here) so that a
// slow machine's gates do not decide the ratio: it stays under 0.5 while a gate takes
// less than 4/3 s.
func BenchmarkAgents(b *testing.B) {
	bot := "sleep 4\necho $HGATE_ITERATION > w/f$HGATE_ITERATION\n"
	var ratio float64
	for b.Loop() {
		var took [2]time.Duration
		for i, agents := range []int{3, 1} {
			r := genProject(b, bot, agents)
			start := time.Now()
			s, log := runGen(b, r, 3, false)
			took[i] = time.Since(start)
			if len(s.Iterations) != 3 || s.Kept != 3 {
				b.Fatalf("--agents %d: %d iterations, %d kept; want 3, 3\n%s", agents, len(s.Iterations), s.Kept, log)
			}
		}
		ratio = took[0].Seconds() / took[1].Seconds()
		b.Logf("--agents 3: %s, --agents 1: %s", took[0].Round(time.Millisecond), took[1].Round(time.Millisecond))
	}
	b.ReportMetric(ratio, "agents3/agents1")
}

// TestGenerationBudget: a budget spent by the agents of a generation stops the run before
// its first candidate's gate (the candidates wait in the journal), and --resume with a
// larger budget gates them all, the first rebased onto nothing, the second onto the first.
func TestGenerationBudget(t *testing.T) {
	r := genProject(t, `echo HGATE_COST_USD=1
case $HGATE_AGENT_INDEX in 1) echo a > w/a ;; 2) echo b > w/b ;; esac
`, 2)
	env, err := openEnv(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	lc := env.Config.Loop
	lc.Iterations, lc.BudgetUSD = 2, 1.5
	if _, err := sandbox.Available(); err != nil {
		lc.Sandbox.Enabled = false
	}
	var log bytes.Buffer
	s, err := loop.Run(context.Background(), loop.Options{Env: env, Loop: lc, Log: &log, Grace: time.Second})
	if err != nil || s.StopReason != loop.StopBudget || len(s.Iterations) != 0 || s.SpendUSD != 2 {
		t.Fatalf("stop %s after %d iterations, $%v spent (%v); want budget before the first gate, $2\n%s", s.StopReason, len(s.Iterations), s.SpendUSD, err, log.String())
	}
	lc.BudgetUSD = 10
	log.Reset()
	s, err = loop.Run(context.Background(), loop.Options{Env: env, Loop: lc, Log: &log, Grace: time.Second, Resume: true})
	if err != nil || s.Kept != 2 || s.SpendUSD != 2 || !s.Iterations[1].Rebased {
		t.Fatalf("resumed: %d kept, $%v spent (%v); want both candidates kept, the second rebased, $2 in all\n%s", s.Kept, s.SpendUSD, err, log.String())
	}
}
