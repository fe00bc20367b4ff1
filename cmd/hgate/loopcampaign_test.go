//go:build unix

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hgate/hgate/internal/timescale"
	"github.com/hgate/hgate/loop"
	"github.com/hgate/hgate/record"
)

// The loop's kill campaign over the harness phases and the generations (scripts
// kill_loop_harness.txtar and kill_loop_agents.txtar), e.g. a longer one:
//
//	go test ./cmd/hgate -run 'TestScripts/kill_loop_' -kill.loop.rounds 20
//
// or HGATE_KILL_LOOP_ROUNDS=20 in the environment.
var killLoopRounds = flag.Int("kill.loop.rounds", 0, "loop runs of the loop kill campaign (0: $HGATE_KILL_LOOP_ROUNDS, else the script's own)")

// harnessKillPoints are the points a `hgate loop --harness` run passes: the attempt, its
// gate and record, the activation, each harness phase's agent (running, ended, journaled),
// the qualification (judged, committed to refs/hgate/harness, registered), and a
// resume's closing of a killed phase. "timed" is a SIGKILL at a random moment instead.
var harnessKillPoints = []string{
	"loop-activated", "loop-agent-attempt-ended", "gate-scored", "record-applied",
	"ref-locked:refs/hgate/gated", "loop-agent-reflect-ended", "loop-agent-reflect-journaled",
	"loop-agent-build-ended", "loop-agent-build-journaled", "qualify-checked",
	"ref-locked:refs/hgate/harness", "qualify-committed", "loop-qualified", "timed",
	"loop-agent-attempt", "loop-agent-resumed", "loop-agent-reflect", "loop-agent-build",
	"loop-agent-artifact_repair-ended", "loop-agent-artifact_repair-journaled",
	"loop-agent-artifact_repair", "ledger-recorded", "timed", "timed",
}

// agentsKillPoints are the points a `hgate loop --agents 2` run passes: each agent's
// worktree made, the agents running, each ended and its candidate taken, the second
// candidate merged onto the first's kept commit, placed, gated and recorded, and the
// worktrees removed at the generation's end.
var agentsKillPoints = []string{
	"worktree-added", "loop-generation-agent", "loop-generation-ended:1", "loop-generation-taken",
	"loop-generation-ended:2", "loop-generation-place", "gate-scored", "record-applied",
	"ref-locked:refs/hgate/gated", "loop-generation-merged", "ref-locked:refs/hgate/best",
	"ledger-recorded", "loop-generation-removed", "timed", "timed",
}

// loopKills is `loopkills MODE SEED ROUNDS`, MODE harness or agents: each round is one
// loop run (`hgate loop --harness`, or `--agents 2`) killed six to ten times, at the
// mode's fault points in turn or at a random moment, each time resumed, and resumed
// without a kill to its end. Then, from the repository and the disk: the readers answer,
// the run's summary has every iteration, results.tsv's rows are the branch's commits and
// the kept iterations', every rejected attempt's ref exists, refs/hgate/best is a best
// row's commit, refs/hgate/gated is HEAD, the registry's commit is on refs/hgate/harness,
// no process, mount, worktree or lock of the run is left. Everything must hold: 0
// inconsistencies.
func loopKills(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 || (args[0] != "harness" && args[0] != "agents") {
		ts.Fatalf("usage: loopkills harness|agents SEED ROUNDS")
	}
	seed, err := strconv.ParseUint(args[1], 10, 64)
	ts.Check(err)
	rounds, err := strconv.Atoi(args[2])
	ts.Check(err)
	if n, err := strconv.Atoi(os.Getenv("HGATE_KILL_LOOP_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	if *killLoopRounds > 0 {
		rounds = *killLoopRounds
	}
	lc := &loopCampaign{campaign: campaign{ts: ts, rng: rand.New(rand.NewPCG(seed, 1))}, mode: args[0],
		reached: map[string]int{}}
	lc.points = harnessKillPoints
	lc.argv = []string{"loop", "--iterations", "2", "--harness"}
	if lc.mode == "agents" {
		lc.points = agentsKillPoints
		lc.argv = []string{"loop", "--iterations", "2", "--agents", "2"}
	}
	for i := range rounds {
		lc.run(i)
	}
	runs := lc.checkSpend()
	lc.report(seed, rounds, runs)
}

type loopCampaign struct {
	campaign
	mode    string
	points  []string
	argv    []string
	next    int            // the next point to kill at, in turn
	reached map[string]int // the kills at each point
}

// run is one round: a loop run killed six to ten times, resumed to its end, checked.
// The points are in the order a run passes them, so consecutive kills of one run mostly
// meet the next point in its resume; a point not reached ends the round's kills.
func (lc *loopCampaign) run(i int) {
	kills := 6 + lc.rng.IntN(5)
	argv := lc.argv
	for k := 0; ; k++ {
		point := ""
		if k < kills {
			point = lc.points[lc.next%len(lc.points)]
			lc.next++
		}
		what := fmt.Sprintf("round %d: hgate %s", i, strings.Join(argv, " "))
		var killed bool
		if point == "timed" {
			delay := fmt.Sprintf("%.3f", lc.rng.Float64()*8)
			what += " killed after " + delay + "s"
			killed = lc.killedAfter(delay, argv)
		} else {
			what += " at " + point
			killed = lc.hgate(what, point, argv...)
		}
		if !killed {
			if k < kills {
				lc.reached[point+" (not reached)"]++
			}
			break
		}
		lc.kills++
		lc.reached[point]++
		lc.hgate(what+", then the reader status", "", "status")
		argv = append(slices.Clone(lc.argv), "--resume")
	}
	lc.check(fmt.Sprintf("round %d", i))
}

// check runs the readers and checks the state a finished run left.
func (lc *loopCampaign) check(what string) {
	for _, r := range [][]string{{"status"}, {"guard"}, {"state", "log"}} {
		lc.hgate(what+": the reader "+r[0], "", r...)
	}
	lc.checkLeftovers(what)
	lc.checkRun(what)
	lc.checkRows(what)
	lc.checkHarness(what)
	lc.checkWorktrees(what)
	lc.checkProcesses(what)
	lc.checkMounts(what)
}

func (lc *loopCampaign) bad(format string, args ...any) {
	lc.inconsistent = append(lc.inconsistent, fmt.Sprintf(format, args...))
}

// git runs git in $WORK and returns its standard output ("" and an inconsistency when it fails).
func (lc *loopCampaign) gitOut(args ...string) string {
	if err := lc.ts.Exec("git", args...); err != nil {
		lc.bad("git %s: %v: %s", strings.Join(args, " "), err, lc.ts.ReadFile("stderr"))
		return ""
	}
	return lc.ts.ReadFile("stdout")
}

// summaries are the loop runs' summaries, oldest first.
func (lc *loopCampaign) summaries() []loop.Summary {
	files, _ := filepath.Glob(filepath.Join(lc.ts.Getenv("WORK"), "workspace", "runs", "*", "summary.json"))
	var out []loop.Summary
	for _, f := range files {
		var s loop.Summary
		data, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(data, &s)
		}
		if err != nil {
			lc.bad("%s: %v", f, err)
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b loop.Summary) int { return strings.Compare(a.Started, b.Started) })
	return out
}

// checkRun: the newest run finished its iterations, each numbered, and each rejected
// attempt's ref names a commit.
func (lc *loopCampaign) checkRun(what string) {
	ss := lc.summaries()
	if len(ss) == 0 {
		lc.bad("%s: no summary.json", what)
		return
	}
	s := ss[len(ss)-1]
	if s.StopReason != loop.StopIterations || len(s.Iterations) != 2 || s.Finished == "" {
		lc.bad("%s: run %s stopped %q after %d iteration(s)", what, s.RunID, s.StopReason, len(s.Iterations))
	}
	for i, it := range s.Iterations {
		if it.Iteration != i+1 {
			lc.bad("%s: run %s: iteration %d numbered %d", what, s.RunID, i+1, it.Iteration)
		}
		if lc.mode == "harness" && it.Harness == nil {
			lc.bad("%s: run %s: iteration %d has no harness outcome", what, s.RunID, it.Iteration)
		}
		lc.checkStarted(what, s.RunID, it)
		if it.Outcome == loop.OutcomeRejected {
			ref := fmt.Sprintf("refs/hgate/attempts/%s/%d", s.RunID, it.Iteration)
			if it.AttemptRef != ref || strings.TrimSpace(lc.gitOut("rev-parse", "--verify", "-q", ref+"^{commit}")) == "" {
				lc.bad("%s: run %s: rejected iteration %d: attempt ref %q, want %s on a commit", what, s.RunID, it.Iteration, it.AttemptRef, ref)
			}
		}
	}
}

// checkStarted: an agent run the summary calls interrupted (hgate killed while it ran)
// did start: its folder holds its output. One hgate died under before it started runs
// again on the resume.
func (lc *loopCampaign) checkStarted(what, run string, it loop.Iteration) {
	dir := filepath.Join(lc.ts.Getenv("WORK"), "workspace", "runs", run, "iterations", strconv.Itoa(it.Iteration))
	started := func(sub, name string, a loop.AgentOutcome) {
		if _, err := os.Stat(filepath.Join(dir, sub, "agent.stdout")); a == loop.AgentInterrupted && err != nil {
			lc.bad("%s: run %s: iteration %d: %s called interrupted, but it never started (%v)", what, run, it.Iteration, name, err)
		}
	}
	if it.AgentIndex == 0 { // a generation's agent that never started is said so (genAgent)
		started("", "the attempt's agent", it.Agent)
	}
	if it.Harness != nil {
		for _, p := range it.Harness.Phases {
			started(strings.ReplaceAll(p.Phase, "_", "-"), "the "+p.Phase+" agent", p.Agent)
		}
	}
}

// checkRows: results.tsv's rows after the baseline are the branch's commits since the
// first (the prepared one) and the kept iterations of every run, in order; refs/hgate/best
// is the commit of a row with the highest val_score; refs/hgate/gated is HEAD.
func (lc *loopCampaign) checkRows(what string) {
	rows, err := record.Load(filepath.Join(lc.ts.Getenv("WORK"), "workspace", "results.tsv"))
	if err != nil || len(rows) == 0 {
		lc.bad("%s: results.tsv: %v", what, err)
		return
	}
	var recorded []string
	for _, r := range rows[1:] {
		recorded = append(recorded, r.Commit)
	}
	var kept []string
	for _, s := range lc.summaries() {
		for _, it := range s.Iterations {
			if it.Outcome == loop.OutcomeKept {
				kept = append(kept, it.Commit[:min(7, len(it.Commit))])
			}
		}
	}
	first := strings.TrimSpace(lc.gitOut("rev-list", "--max-parents=0", "HEAD"))
	log := strings.Fields(lc.gitOut("log", "--first-parent", "--reverse", "--format=%h", "--abbrev=7", first+"..HEAD"))
	if fmt.Sprint(recorded) != fmt.Sprint(kept) || fmt.Sprint(recorded) != fmt.Sprint(log) {
		lc.bad("%s: results.tsv %v, kept iterations %v, commits %v", what, recorded, kept, log)
	}
	top, _ := record.Best(rows)
	best := ""
	if lc.ts.Exec("git", "rev-parse", "-q", "--verify", "refs/hgate/best") == nil {
		best = strings.TrimSpace(lc.ts.ReadFile("stdout"))
	}
	ok := best == "" && rows[0].ValScore == top // no row above the baseline's: no best ref yet
	for _, r := range rows {
		ok = ok || r.ValScore == top && (strings.HasPrefix(best, r.Commit) || r.Commit == "baseline" && best == first)
	}
	if !ok {
		lc.bad("%s: refs/hgate/best %s is no commit of a row with the best val_score %v", what, best, top)
	}
	if gated, head := lc.gitOut("rev-parse", "refs/hgate/gated"), lc.gitOut("rev-parse", "HEAD"); gated != head {
		lc.bad("%s: refs/hgate/gated %s, HEAD %s", what, strings.TrimSpace(gated), strings.TrimSpace(head))
	}
	// The harness folder is the agent's, never committed: it may be untracked.
	if st := lc.gitOut("status", "--porcelain", "--untracked-files=all", "--", ".", ":!.hgate/harness"); st != "" {
		lc.bad("%s: worktree not clean:\n%s", what, st)
	}
}

// checkHarness: the registry's commit is refs/hgate/harness or one of its ancestors (a
// kill between the two leaves the ref ahead, never behind), and every qualified entry's
// folder is in that commit.
func (lc *loopCampaign) checkHarness(what string) {
	if lc.mode != "harness" {
		return
	}
	data, err := os.ReadFile(filepath.Join(lc.ts.Getenv("WORK"), "workspace", "harness.json"))
	if err != nil {
		lc.bad("%s: harness.json: %v", what, err)
		return
	}
	var reg struct {
		Commit    string `json:"commit"`
		Artifacts []struct {
			Path   string `json:"path"`
			Status string `json:"status"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(data, &reg); err != nil || reg.Commit == "" {
		lc.bad("%s: harness.json: commit %q, %v", what, reg.Commit, err)
		return
	}
	if err := lc.ts.Exec("git", "merge-base", "--is-ancestor", reg.Commit, "refs/hgate/harness"); err != nil {
		lc.bad("%s: harness.json's commit %s is not on refs/hgate/harness: %v", what, reg.Commit, err)
	}
	files := lc.gitOut("ls-tree", "-r", "--name-only", reg.Commit)
	for _, a := range reg.Artifacts {
		if a.Status == "qualified" && !strings.Contains(files, "harness/"+a.Path+"/") {
			lc.bad("%s: qualified %s is not in the registry's commit %s", what, a.Path, reg.Commit)
		}
	}
}

// checkWorktrees: the main worktree is git's only one, no worktree is locked, and no
// agent folder of a run is left.
func (lc *loopCampaign) checkWorktrees(what string) {
	list := lc.gitOut("worktree", "list", "--porcelain")
	if n := strings.Count(list, "worktree "); n != 1 || strings.Contains(list, "\nlocked") {
		lc.bad("%s: git worktree list:\n%s", what, list)
	}
	git := filepath.Join(lc.ts.Getenv("WORK"), ".git")
	for _, dir := range []string{"worktrees", "hgate/agents"} {
		filepath.WalkDir(filepath.Join(git, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				lc.leftovers = append(lc.leftovers, what+": "+p)
			}
			return nil
		})
	}
}

// checkProcesses: no process is left that works in the script's folders (its
// environment, command line or folder names $WORK or the script's TMPDIR): no agent, no
// tool, no shim. A killed hgate's processes are ended by the next one; they are given up
// to ten seconds (stretched by HGATE_TEST_TIMESCALE) to be gone.
func (lc *loopCampaign) checkProcesses(what string) {
	marks := []string{lc.ts.Getenv("WORK"), lc.ts.Getenv("TMPDIR")}
	var left []string
	for deadline := time.Now().Add(timescale.D(10 * time.Second)); ; time.Sleep(200 * time.Millisecond) {
		left = ours(marks)
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, p := range left {
		lc.leftovers = append(lc.leftovers, what+": process "+p)
	}
}

// ours lists the processes (pid and command line) whose environment, command line or
// current folder names one of marks.
func ours(marks []string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := "/proc/" + e.Name()
		env, _ := os.ReadFile(dir + "/environ")
		cmd, _ := os.ReadFile(dir + "/cmdline")
		cwd, _ := os.Readlink(dir + "/cwd")
		for _, m := range marks {
			if m != "" && (strings.Contains(string(env), m) || strings.Contains(string(cmd), m) || strings.HasPrefix(cwd, m)) {
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
				break
			}
		}
	}
	return out
}

// checkMounts: no mount under the script's folders is left in this mount namespace.
func (lc *loopCampaign) checkMounts(what string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		lc.bad("%s: mountinfo: %v", what, err)
		return
	}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		for _, m := range []string{lc.ts.Getenv("WORK"), lc.ts.Getenv("TMPDIR")} {
			if m != "" && strings.HasPrefix(f[4], m) {
				lc.leftovers = append(lc.leftovers, what+": mount "+f[4])
			}
		}
	}
}

// report logs the campaign's figures and fails on any inconsistency or leftover.
func (lc *loopCampaign) report(seed uint64, rounds, runs int) {
	ts := lc.ts
	ts.Logf("loop kill campaign %s (seed %d): %d rounds, %d kills, %d runs' spend checked, %d inconsistencies, %d leftovers",
		lc.mode, seed, rounds, lc.kills, runs, len(lc.inconsistent), len(lc.leftovers))
	var pts []string
	for p, n := range lc.reached {
		pts = append(pts, fmt.Sprintf("%s ×%d", p, n))
	}
	slices.Sort(pts)
	ts.Logf("  kills: %s", strings.Join(pts, ", "))
	// The figures, also when the script passes (go test shows a passing script's log only with -v).
	fmt.Fprintf(os.Stderr, "loop kill campaign %s (seed %d): %d rounds, %d kills (%s), %d inconsistencies, %d leftovers\n",
		lc.mode, seed, rounds, lc.kills, strings.Join(pts, ", "), len(lc.inconsistent), len(lc.leftovers))
	for _, s := range append(lc.inconsistent, lc.leftovers...) {
		ts.Logf("  %s", s)
	}
	if len(lc.inconsistent)+len(lc.leftovers) > 0 {
		ts.Fatalf("the loop kill campaign found %d inconsistencies and %d leftovers", len(lc.inconsistent), len(lc.leftovers))
	}
}

// TestOursFindsAProcess: the campaign's process check finds a process by a mark in its
// environment or its folder, and not one without (a check that could not fail finds nothing).
func TestOursFindsAProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc: the loop kill campaign runs on Linux only")
	}
	mark := t.TempDir()
	for _, tc := range []struct {
		env []string
		dir string
	}{{env: []string{"X=" + mark + "/y"}}, {dir: mark}} {
		cmd := exec.Command("sleep", "60")
		cmd.Env, cmd.Dir = tc.env, tc.dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		found := slices.ContainsFunc(ours([]string{mark}), func(p string) bool { return strings.HasPrefix(p, strconv.Itoa(cmd.Process.Pid)+" ") })
		cmd.Process.Kill()
		cmd.Wait()
		if !found {
			t.Errorf("env %v, folder %q: not found", tc.env, tc.dir)
		}
		if slices.ContainsFunc(ours([]string{mark}), func(p string) bool { return strings.HasPrefix(p, strconv.Itoa(cmd.Process.Pid)+" ") }) {
			t.Errorf("env %v, folder %q: found once ended", tc.env, tc.dir)
		}
	}
}
