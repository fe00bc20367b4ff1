package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/hgate/hgate/internal/scratch"
	"github.com/hgate/hgate/internal/statefile"
)

// The kill campaign (script state_kill_campaign.txtar runs a short one) and the flags
// that make it the full one, e.g.
//
//	go test ./cmd/hgate -run 'TestScripts/state_kill_campaign' -kill.rounds 200 -kill.timed
var (
	killRounds = flag.Int("kill.rounds", 0, "rounds of the kill campaign (0: the script's own, a short one)")
	killSeed   = flag.Uint64("kill.seed", 0, "seed of the kill campaign (0: the script's own)")
	killTimed  = flag.Bool("kill.timed", false, "also SIGKILL commands at a random moment (timing-dependent: the full campaign only), not only at HGATE_FAULT points")
)

// faultPoints are where a campaign's writer may be killed (HGATE_FAULT) — "" is not at all.
var faultPoints = []string{
	"", "", "apply", "ledger-recorded", "ledger-partial", "gate-scored", "record-applied",
	"ref-locked:refs/hgate/ledger", "ref-locked:refs/hgate/gated", "ref-locked:refs/hgate/best",
	"trace-published", // a task's trace copied into {trace_dir} by descriptor, the others' not yet
}

// loopFaultPoints are a loop's: the gate's and record's, and its agent's (running, and
// ended with its output on disk before the journal is told).
var loopFaultPoints = append(slices.Clone(faultPoints), "loop-agent-attempt", "loop-agent-attempt-ended")

// killCampaign is `killcampaign SEED ROUNDS`: in a prepared repository, each round
// commits a new agent.sh, runs gate, record or a one-iteration loop killed (SIGKILL) at a
// random HGATE_FAULT point, then the readers (status, guard, report, state log) and the
// next writer (the same command again, the loop with --resume). It counts
// inconsistencies — a command not killed that could not answer (exit 2), a reader that
// failed — and leftovers after the next writer: a ref lock, a state file's temporary
// file, a temporary folder of a process that is gone. Both must be 0.
func killCampaign(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: killcampaign SEED ROUNDS")
	}
	var seed uint64
	var rounds int
	_, err := fmt.Sscan(args[0]+" "+args[1], &seed, &rounds)
	ts.Check(err)
	if *killSeed != 0 {
		seed = *killSeed
	}
	if *killRounds != 0 {
		rounds = *killRounds
	}
	c := &campaign{ts: ts, rng: rand.New(rand.NewPCG(seed, 0))}
	for i := range rounds {
		c.round(i)
	}
	runs := c.checkSpend()
	ts.Logf("kill campaign (seed %d): %d rounds, %d kills, %d loop runs' spend checked, %d inconsistencies, %d leftovers", seed, rounds, c.kills, runs, len(c.inconsistent), len(c.leftovers))
	for _, s := range append(c.inconsistent, c.leftovers...) {
		ts.Logf("  %s", s)
	}
	if len(c.inconsistent)+len(c.leftovers) > 0 {
		ts.Fatalf("the kill campaign found %d inconsistencies and %d leftovers", len(c.inconsistent), len(c.leftovers))
	}
}

type campaign struct {
	ts                      *testscript.TestScript
	rng                     *rand.Rand
	kills                   int
	inconsistent, leftovers []string
}

func (c *campaign) round(i int) {
	// Mostly a tree that solves everything (differing by its comment): it passes, so
	// record moves the refs and every fault point is reached; now and then a worse one.
	solved := 6
	if c.rng.IntN(4) == 0 {
		solved = 1 + c.rng.IntN(5)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# round %d\ncase $1 in ", i)
	for t := 1; t <= solved; t++ {
		if t > 1 {
			b.WriteString("|")
		}
		fmt.Fprintf(&b, "b%d", t)
	}
	b.WriteString(`) echo "solved $1" ;; esac` + "\n")
	c.ts.Check(os.WriteFile(c.ts.MkAbs("agent.sh"), []byte(b.String()), 0o644))
	c.git("commit", "-qam", fmt.Sprintf("round %d", i))

	steps := [][]string{{"gate"}, {"record"}}
	if c.rng.IntN(3) == 0 {
		steps = [][]string{{"loop", "--iterations", "1", "--no-sandbox"}}
	}
	for _, cmd := range steps {
		c.step(fmt.Sprintf("round %d: hgate %s", i, strings.Join(cmd, " ")), cmd)
	}
}

// step runs one writer, perhaps killed, then the readers, then — when it was killed —
// the next writer: the same command again (the loop with --resume).
func (c *campaign) step(what string, cmd []string) {
	var killed bool
	if *killTimed && c.rng.IntN(2) == 0 {
		delay := fmt.Sprintf("%.3f", c.rng.Float64()*2)
		what += " killed after " + delay + "s"
		killed = c.killedAfter(delay, cmd)
	} else {
		points := faultPoints
		if cmd[0] == "loop" {
			points = loopFaultPoints
		}
		point := points[c.rng.IntN(len(points))]
		what += " at " + point
		killed = c.hgate(what, point, cmd...)
	}
	for _, r := range [][]string{{"status"}, {"guard"}, {"report", "-o", "report.html"}, {"state", "log"}} {
		c.hgate(what+", then the reader "+r[0], "", r...)
	}
	if !killed {
		c.checkLeftovers(what)
		return
	}
	c.kills++
	next := cmd
	if cmd[0] == "loop" {
		next = append(slices.Clone(cmd), "--resume")
	}
	c.hgate(what+", then the next hgate "+strings.Join(next, " "), "", next...)
	c.checkLeftovers(what)
}

func (c *campaign) git(args ...string) {
	if err := c.ts.Exec("git", args...); err != nil && !strings.Contains(c.ts.ReadFile("stdout"), "nothing to commit") {
		c.ts.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, c.ts.ReadFile("stderr"))
	}
}

// hgate runs hgate ARGS with HGATE_FAULT=point and reports whether it was killed; an
// exit 2, or any failure of a reader, is an inconsistency.
func (c *campaign) hgate(what, point string, args ...string) (killed bool) {
	c.ts.Setenv("HGATE_FAULT", point)
	err := c.ts.Exec("hgate", args...)
	c.ts.Setenv("HGATE_FAULT", "")
	return c.judge(what, args, err)
}

// killedAfter runs hgate ARGS and SIGKILLs it after delay seconds, unless it ended.
func (c *campaign) killedAfter(delay string, args []string) bool {
	script := `hgate "$@" & p=$!; sleep ` + delay + `; kill -KILL $p 2>/dev/null; wait $p`
	err := c.ts.Exec("sh", append([]string{"-c", script, "sh"}, args...)...)
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 128+int(syscall.SIGKILL) {
		return true
	}
	return c.judge("hgate "+strings.Join(args, " ")+" (timed)", args, err)
}

func (c *campaign) judge(what string, args []string, err error) (killed bool) {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return false
	case errors.As(err, &ee) && ee.ProcessState != nil:
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return true
		}
		reader := args[0] == "status" || args[0] == "guard" || args[0] == "report" || args[0] == "state"
		if ee.ExitCode() == 2 || reader {
			c.inconsistent = append(c.inconsistent, fmt.Sprintf("%s: exit %d: %s", what, ee.ExitCode(), strings.TrimSpace(c.ts.ReadFile("stderr"))))
		}
		return false
	}
	c.ts.Fatalf("%s: %v", what, err)
	return false
}

// checkSpend compares each loop run's spend (summary.json) with what its agents reported:
// every agent run of the script's bot prints HGATE_COST_USD=0.01, so a run killed and
// resumed must count each agent run's output once, never lose or repeat one. It returns
// how many runs it checked.
func (c *campaign) checkSpend() int {
	work := c.ts.Getenv("WORK")
	runs, _ := filepath.Glob(filepath.Join(work, "workspace", "runs", "*", "summary.json"))
	for _, s := range runs {
		dir := filepath.Dir(s)
		spent, err := summarySpend(s)
		if err != nil {
			c.inconsistent = append(c.inconsistent, fmt.Sprintf("%s: %v", s, err))
			continue
		}
		outs, _ := filepath.Glob(filepath.Join(dir, "iterations", "*", "agent.stdout"))
		phases, _ := filepath.Glob(filepath.Join(dir, "iterations", "*", "*", "agent.stdout")) // harness phases, repairs
		outs = append(outs, phases...)
		reported := 0
		for _, o := range outs {
			data, _ := os.ReadFile(o)
			reported += strings.Count(string(data), "HGATE_COST_USD=0.01\n")
		}
		if want := float64(reported) / 100; math.Abs(spent-want) > 1e-9 {
			c.inconsistent = append(c.inconsistent, fmt.Sprintf("run %s: spend $%v, its agents reported $%v", filepath.Base(dir), spent, want))
		}
	}
	return len(runs)
}

// checkLeftovers looks, after a writer has run, for what a killed hgate may leave.
func (c *campaign) checkLeftovers(what string) {
	work := c.ts.Getenv("WORK")
	filepath.WalkDir(filepath.Join(work, ".git"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".lock") && filepath.Base(p) != "hgate.lock" {
			c.leftovers = append(c.leftovers, what+": "+p)
		}
		return nil
	})
	for _, dir := range []string{"workspace", "workspace/receipts"} {
		entries, _ := os.ReadDir(filepath.Join(work, dir))
		for _, e := range entries {
			if statefile.IsTemp(e.Name()) {
				c.leftovers = append(c.leftovers, what+": "+filepath.Join(dir, e.Name()))
			}
		}
	}
	tmp := c.ts.Getenv("TMPDIR")
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		for _, prefix := range scratch.Prefixes {
			if scratch.Orphaned(e.Name(), prefix) {
				c.leftovers = append(c.leftovers, what+": "+filepath.Join(tmp, e.Name()))
				break
			}
		}
	}
}

// summarySpend is the spend_usd a loop run's summary.json records.
func summarySpend(path string) (float64, error) {
	var sum struct {
		SpendUSD float64 `json:"spend_usd"`
	}
	data, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(data, &sum)
	}
	return sum.SpendUSD, err
}
