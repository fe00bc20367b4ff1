// Package loop is hgate's unattended loop: it runs a coding agent, gates what
// the agent left, commits a passing change (or keeps a rejected one under
// refs/hgate/attempts/<run>/<n> and restores HEAD), records it, writes the
// learnings entry, and goes on until a stop condition fires.
//
// Every phase is written to a journal (runs/<run-id>/journal.json) before and
// after it runs, so `hgate loop --resume` continues after a crash or kill -9:
// the gate is re-run on what the agent left, a commit whose branch update
// landed is finished rather than repeated, record is idempotent, and a saved
// attempt is found under its ref.
//
// The agent may write a one-line commit message to <workspace>/loop-message.txt
// (also given as HGATE_MESSAGE_FILE); hgate removes it before each agent run.
package loop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/record"
	"github.com/hgate/hgate/suite"
)

// Stop reasons, as summary.json names them.
const (
	StopIterations  = "iterations"
	StopPatience    = "patience"
	StopScore       = "stop_score"
	StopDeadline    = "deadline"
	StopInterrupted = "interrupted"
	StopCrashes     = "max_consecutive_crashes"
	StopError       = "error"
)

// MessageFileName is the file in the workspace where the agent may leave a
// one-line commit message.
const MessageFileName = "loop-message.txt"

// AttemptsRef is the prefix of the refs holding rejected attempts.
const AttemptsRef = "refs/hgate/attempts/"

// Options configure a run.
type Options struct {
	Env    *gate.Env
	Loop   config.Loop // the resolved loop settings (flags applied)
	Resume bool
	// Stream receives one JSON object per iteration (JSON Lines); nil: none.
	Stream io.Writer
	// Log receives one line per iteration and notices; nil: discarded.
	Log io.Writer
	// Grace is the time between SIGTERM and SIGKILL for the agent; 0: 5s.
	Grace time.Duration
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Lock takes the repository lock; nil: no lock. The loop holds it for its own
	// work and lets go of it while the agent runs, so the agent can run hgate bench
	// and hgate gate itself.
	Lock func(ctx context.Context) (release func(), err error)
	// Serve runs "hgate ARGS..." for the agent, who reaches it over the loop's socket
	// (agentapi): bench, gate, guard with the flags agentapi.Check lets through. nil:
	// a served command exits 2.
	Serve func(ctx context.Context, args []string, stdout, stderr io.Writer) int
	// Status answers the agent's hgate status (the loop adds the iteration and run id).
	Status func() (agentapi.Status, error)
}

// Iteration is one iteration's outcome in summary.json and the JSON stream.
type Iteration struct {
	Iteration    int      `json:"iteration"`
	Outcome      string   `json:"outcome"` // kept, rejected, unchanged, error
	Agent        string   `json:"agent"`   // ok, crashed, timeout, interrupted
	AgentDetail  string   `json:"agent_detail,omitempty"`
	Verdict      *string  `json:"verdict"` // pass, reject; null when the gate did not run
	ValScore     *float64 `json:"val_score"`
	BestBefore   *float64 `json:"best_before"`
	NewBest      bool     `json:"new_best"`
	Commit       string   `json:"commit,omitempty"`
	Message      string   `json:"message,omitempty"`
	AttemptRef   string   `json:"attempt_ref,omitempty"`
	Reasons      []string `json:"reasons"`
	Repairs      int      `json:"repairs"`
	AgentSeconds float64  `json:"agent_seconds"`
	GateSeconds  float64  `json:"gate_seconds"`
	Seconds      float64  `json:"seconds"`
	Resumed      bool     `json:"resumed,omitempty"`
}

// Summary is summary.json.
type Summary struct {
	RunID       string      `json:"run_id"`
	Started     string      `json:"started"`
	Finished    string      `json:"finished,omitempty"`
	Baseline    *float64    `json:"baseline"`
	BestAtStart *float64    `json:"best_at_start"`
	Best        *float64    `json:"best"`
	Improvement float64     `json:"improvement"`
	Kept        int         `json:"kept"`
	Rejected    int         `json:"rejected"`
	Iterations  []Iteration `json:"iterations"`
	StopReason  string      `json:"stop_reason"`
	StopDetail  string      `json:"stop_detail,omitempty"`
	Seconds     float64     `json:"seconds"`
	Sandbox     string      `json:"sandbox"` // "landlock ABI N", or "off": the agent ran as the user, unsandboxed
}

// journal is the run's progress, rewritten atomically around every phase.
type journal struct {
	RunID        string       `json:"run_id"`
	Started      string       `json:"started"`
	Deadline     string       `json:"deadline"` // RFC 3339, "" = none
	Next         int          `json:"next"`     // the iteration in progress, or the next one
	Phase        string       `json:"phase"`    // "", agent, gate, commit, record, attempt, restore, learn
	Repair       int          `json:"repair"`
	PreHead      string       `json:"pre_head"`
	CommitParent string       `json:"commit_parent"`
	AgentPID     int          `json:"agent_pid"`
	AgentStart   string       `json:"agent_start"`
	IterStarted  string       `json:"iter_started"`
	Current      *Iteration   `json:"current"`
	LastReport   *gate.Report `json:"last_report"`
	Iterations   []Iteration  `json:"iterations"`
	Baseline     *float64     `json:"baseline"`
	BestAtStart  *float64     `json:"best_at_start"`
	SinceBest    int          `json:"since_best"`
	Crashes      int          `json:"crashes"`
	StopReason   string       `json:"stop_reason"`
	StopDetail   string       `json:"stop_detail"`
	// Refs is refs/hgate/* as hgate left them before the agent's phase (and after each
	// command it served the agent); Tamper lists what changed behind hgate's back since.
	Refs   gitguard.RefSnapshot `json:"refs,omitempty"`
	Tamper []string             `json:"tamper,omitempty"`
	// Sandbox is how the agent runs: "landlock ABI N", or "off".
	Sandbox string `json:"sandbox"`
	// LearningNo is the number of the iteration's learnings.md entry, once chosen.
	LearningNo int `json:"learning_no,omitempty"`
}

// runner is one run in progress.
type runner struct {
	opts   Options
	env    *gate.Env
	cfg    config.Loop
	repo   *gitguard.Repo
	gopts  gitguard.Options
	ws     string
	dir    string // runs/<id>
	j      *journal
	now    func() time.Time
	log    io.Writer
	dead   time.Time
	author object.Signature

	release func()           // the repository lock, while held
	srv     *agentapi.Server // the socket the agent's hgate talks to
	// agentTmp is where the agent's private TMPDIRs are made; hiddenTmp, set while the
	// agent is sandboxed, is where this process's own temporary folders go.
	agentTmp, hiddenTmp string

	// refsMu orders the check of refs/hgate/* after the agent's phase with the
	// commands the loop serves the agent meanwhile (they move the ledger).
	refsMu  sync.Mutex
	serving bool // checkRefs runs before a served command, in the agent's phase
}

// Run runs the loop until a stop condition fires and returns the summary.
// An interrupted run returns the summary and an error wrapping
// context.Canceled; a run that could not go on returns its error.
func Run(ctx context.Context, opts Options) (*Summary, error) {
	r := &runner{opts: opts, env: opts.Env, cfg: opts.Loop, repo: opts.Env.Repo, now: opts.Now, log: opts.Log}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = io.Discard
	}
	if r.opts.Grace <= 0 {
		r.opts.Grace = 5 * time.Second
	}
	c := r.env.Config
	r.gopts = gate.GuardOptions(c)
	r.ws = c.WorkspaceDir()
	// Commits are the user's, as git commit would sign them: the environment, else git
	// config's user.name and user.email, else hgate's own name.
	r.author = object.Signature{Name: "hgate loop", Email: "hgate@localhost"}
	if n, e := r.repo.Identity(); n != "" && e != "" {
		r.author.Name, r.author.Email = n, e
	}
	if n, e := os.Getenv("GIT_COMMITTER_NAME"), os.Getenv("GIT_COMMITTER_EMAIL"); n != "" && e != "" {
		r.author.Name, r.author.Email = n, e
	}
	becomeSubreaper()
	if err := r.lock(ctx); err != nil {
		return nil, err
	}
	defer r.unlock()
	if err := r.open(); err != nil {
		return nil, err
	}
	srv, err := agentapi.Listen(ctx, agentapi.Options{Exec: r.serve, Status: r.status})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	r.srv = srv
	r.agentTmp = os.TempDir()
	if r.j.Sandbox != SandboxOff {
		restore, err := r.hideTemp()
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	return r.loop(ctx)
}

// hideTemp moves every temporary folder of this process — the clean rooms of the gates
// it runs and serves, their tasks' TMPDIRs and private traces — into one folder that the
// agent's sandbox hides: while the agent waits for a gate it asked for, nothing of the
// test split's run is readable to it. The folder is per repository (the repository lock
// keeps loops apart), emptied when a loop starts, removed when it ends.
func (r *runner) hideTemp() (restore func(), err error) {
	sum := sha256.Sum256([]byte(r.repo.Root()))
	dir := filepath.Join(r.agentTmp, "hgate-rooms-"+hex.EncodeToString(sum[:6]))
	benchmark.RemoveAll(dir) // what a killed loop left
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("loop: private temporary folder: %w", err)
	}
	note := "hgate loop's temporary folder for " + r.repo.Root() + ": the clean rooms of its gates, their tasks' TMPDIRs and traces. The agent's sandbox cannot read it; it is removed when the loop ends.\n"
	// Not inside the worktree (a TMPDIR there), where it would be an untracked file.
	if rel, err := filepath.Rel(r.repo.Root(), dir); err != nil || strings.HasPrefix(rel, "..") {
		if err := os.WriteFile(filepath.Join(dir, "README"), []byte(note), 0o600); err != nil {
			return nil, fmt.Errorf("loop: private temporary folder: %w", err)
		}
	}
	old, had := os.LookupEnv("TMPDIR")
	if err := os.Setenv("TMPDIR", dir); err != nil {
		return nil, err
	}
	r.hiddenTmp = dir
	return func() {
		if had {
			os.Setenv("TMPDIR", old)
		} else {
			os.Unsetenv("TMPDIR")
		}
		benchmark.RemoveAll(dir)
	}, nil
}

// serve runs a command the agent sent over the socket, between checks of hgate's refs.
func (r *runner) serve(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if r.opts.Serve == nil {
		fmt.Fprintln(stderr, "hgate: this loop serves no commands")
		return 2
	}
	code := 2
	r.served(func() { code = r.opts.Serve(ctx, args, stdout, stderr) })
	return code
}

// status is what the agent may know: the caller's figures, with the iteration and run.
func (r *runner) status() (agentapi.Status, error) {
	var st agentapi.Status
	if r.opts.Status != nil {
		var err error
		if st, err = r.opts.Status(); err != nil {
			return st, err
		}
	}
	r.refsMu.Lock()
	if r.j != nil {
		st.Iteration, st.RunID = r.j.Next, r.j.RunID
	}
	r.refsMu.Unlock()
	return st, nil
}

func (r *runner) lock(ctx context.Context) error {
	if r.opts.Lock == nil || r.release != nil {
		return nil
	}
	release, err := r.opts.Lock(ctx)
	if err != nil {
		return err
	}
	r.release = release
	return nil
}

func (r *runner) unlock() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// open starts a new run or loads the last one for --resume.
func (r *runner) open() error {
	runs := filepath.Join(r.ws, "runs")
	if r.opts.Resume {
		id, err := lastRun(runs)
		if errors.Is(err, errNoRun) {
			// Killed before its journal existed: the run never started.
			fmt.Fprintf(r.log, "[loop] no run to resume in %s; starting a new one\n", runs)
			r.opts.Resume = false
			return r.open()
		}
		if err != nil {
			return err
		}
		r.dir = filepath.Join(runs, id)
		path := filepath.Join(r.dir, "journal.json")
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("resume run %s: %w", id, err)
		}
		var j journal
		if err := json.Unmarshal(data, &j); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
		r.j = &j
		if j.Deadline != "" {
			r.dead, _ = time.Parse(time.RFC3339Nano, j.Deadline)
		}
		if d := r.deadline(r.now()); !d.IsZero() {
			r.dead = d // a deadline given again counts from now
			r.j.Deadline = d.Format(time.RFC3339Nano)
		}
		r.j.StopReason, r.j.StopDetail = "", ""
		if r.j.Sandbox, err = sandboxState(r.cfg.Sandbox); err != nil {
			return err
		}
		fmt.Fprintf(r.log, "[loop] resuming run %s at iteration %d\n", id, j.Next)
		return r.writeRunConfig()
	}
	if _, err := os.Stat(filepath.Join(r.ws, "results.tsv")); err != nil {
		return fmt.Errorf("%s: %w: run hgate prepare first", filepath.Join(r.ws, "results.tsv"), fs.ErrNotExist)
	}
	// The anchors and state files must be as the ledger has them before anything trusts them.
	if err := r.env.Verify(); err != nil {
		return err
	}
	// The guard must be clean before the agent starts, or every iteration would fail Step 0.
	if c := r.env.Config; c.FileGuard {
		vs, err := r.repo.Check(r.gopts)
		if err != nil {
			return err
		}
		if len(vs) > 0 {
			var ps []string
			for _, v := range vs {
				p := v.Path
				if p == "" {
					p = "(history)"
				}
				ps = append(ps, fmt.Sprintf("%s (%s: %s)", p, v.Kind, v.Hint))
			}
			return &gate.Refused{Reason: "the worktree already has changes outside allow; commit or revert them before hgate loop: " + strings.Join(ps, "; ")}
		}
	}
	sb, err := sandboxState(r.cfg.Sandbox)
	if err != nil {
		return err
	}
	if sb == SandboxOff {
		fmt.Fprintln(r.log, "[loop] warning: the agent runs without a sandbox, as your own user: it can write .git, the workspace and anything else you can; hgate checks refs/hgate/* and its state around each attempt, but cannot stop every cheat (README, Threat model)")
	}
	start := r.now()
	id := start.UTC().Format("20060102-150405")
	for n := 2; ; n++ {
		if _, err := os.Stat(filepath.Join(runs, id)); errors.Is(err, fs.ErrNotExist) {
			break
		}
		id = start.UTC().Format("20060102-150405") + "-" + strconv.Itoa(n)
	}
	r.dir = filepath.Join(runs, id)
	if err := os.MkdirAll(filepath.Join(r.dir, "iterations"), 0o755); err != nil {
		return err
	}
	r.j = &journal{RunID: id, Started: start.UTC().Format(time.RFC3339), Next: 1, Sandbox: sb}
	if d := r.deadline(start); !d.IsZero() {
		r.dead = d
		r.j.Deadline = d.Format(time.RFC3339Nano)
	}
	rows, err := record.Load(filepath.Join(r.ws, "results.tsv"))
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		b := rows[0].ValScore
		r.j.Baseline = &b
	}
	if b, ok := record.Best(rows); ok {
		r.j.BestAtStart = &b
	}
	// The commit the run starts from is trusted: commits the agent makes are judged from it.
	if err := r.env.MarkGated(); err != nil {
		return err
	}
	if err := r.writeRunConfig(); err != nil {
		return err
	}
	return r.save()
}

// deadline resolves until/for against t; zero when neither is set.
func (r *runner) deadline(t time.Time) time.Time {
	var d time.Time
	if r.cfg.For > 0 {
		d = t.Add(r.cfg.For)
	}
	if r.cfg.Until != "" {
		hm, err := time.Parse("15:04", r.cfg.Until)
		if err == nil {
			lt := t.Local()
			u := time.Date(lt.Year(), lt.Month(), lt.Day(), hm.Hour(), hm.Minute(), 0, 0, time.Local)
			if !u.After(lt) {
				u = u.AddDate(0, 0, 1)
			}
			if d.IsZero() || u.Before(d) {
				d = u
			}
		}
	}
	return d
}

var errNoRun = errors.New("no run to resume")

// lastRun is the newest run folder.
func lastRun(runs string) (string, error) {
	ents, err := os.ReadDir(runs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var ids []string
	for _, e := range ents {
		if _, err := os.Stat(filepath.Join(runs, e.Name(), "journal.json")); e.IsDir() && err == nil {
			ids = append(ids, e.Name())
		}
	}
	if len(ids) == 0 {
		return "", errNoRun
	}
	sort.Slice(ids, func(i, k int) bool { return runLess(ids[i], ids[k]) })
	return ids[len(ids)-1], nil
}

// runLess orders run ids (YYYYMMDD-HHMMSS, then -2, -3... for runs started
// in the same second) by time, then by suffix.
func runLess(a, b string) bool {
	ab, an := splitRun(a)
	bb, bn := splitRun(b)
	if ab != bb {
		return ab < bb
	}
	return an < bn
}

func splitRun(id string) (string, int) {
	if len(id) > 16 && id[15] == '-' {
		n, _ := strconv.Atoi(id[16:])
		return id[:15], n
	}
	return id, 0
}

func (r *runner) writeRunConfig() error {
	c := r.cfg
	rc := map[string]any{
		"run_id": r.j.RunID, "agent": c.Agent, "program": c.Program,
		"attempt_timeout": c.AttemptTimeout.String(), "iterations": c.Iterations, "patience": c.Patience,
		"stop_score": c.StopScore, "until": c.Until, "for": c.For.String(), "deadline": r.j.Deadline,
		"repair_attempts": c.RepairAttempts, "max_consecutive_crashes": c.MaxConsecutiveCrashes,
		"allow": r.env.Config.Allow, "ignore": r.env.Config.Ignore, "workspace": r.env.Config.Workspace,
		"file_guard": r.env.Config.FileGuard, "sandbox": r.j.Sandbox,
		"sandbox_writable": c.Sandbox.Writable, "sandbox_hidden": c.Sandbox.Hidden,
	}
	return writeJSON(filepath.Join(r.dir, "run_config.json"), rc)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
}

// save writes the journal; every phase boundary goes through it.
func (r *runner) save() error {
	return writeJSON(filepath.Join(r.dir, "journal.json"), r.j)
}

func (r *runner) phase(p string) error {
	r.j.Phase = p
	return r.save()
}

func (r *runner) iterDir(n int) string {
	return filepath.Join(r.dir, "iterations", strconv.Itoa(n))
}

func (r *runner) attemptRef(n int) string {
	return AttemptsRef + r.j.RunID + "/" + strconv.Itoa(n)
}

func (r *runner) best() (*float64, error) {
	rows, err := record.Load(filepath.Join(r.ws, "results.tsv"))
	if err != nil {
		return nil, err
	}
	if b, ok := record.Best(rows); ok {
		return &b, nil
	}
	return nil, nil
}

// loop runs iterations until a stop condition fires.
func (r *runner) loop(ctx context.Context) (*Summary, error) {
	started := r.now()
	if r.j.Phase != "" {
		if err := r.iterate(ctx, true); err != nil {
			return r.fail(started, err)
		}
	}
	for {
		reason, detail := r.shouldStop(ctx)
		if reason != "" {
			var err error
			switch reason {
			case StopInterrupted:
				err = context.Canceled
			case StopCrashes:
				// The run did not do its job: say why, from the agent's own words.
				err = r.crashError()
			}
			return r.finish(reason, detail, started, err)
		}
		if err := r.iterate(ctx, false); err != nil {
			return r.fail(started, err)
		}
	}
}

// shouldStop checks the stop conditions between iterations.
func (r *runner) shouldStop(ctx context.Context) (string, string) {
	c := r.cfg
	done := len(r.j.Iterations)
	best, _ := r.best()
	switch {
	case ctx.Err() != nil:
		return StopInterrupted, "SIGINT or SIGTERM"
	case c.StopScore != nil && best != nil && *best >= *c.StopScore:
		return StopScore, fmt.Sprintf("best val_score %.4f reached stop_score %.4f", *best, *c.StopScore)
	case c.Iterations > 0 && done >= c.Iterations:
		return StopIterations, fmt.Sprintf("%d iteration(s) done", done)
	case c.Patience > 0 && r.j.SinceBest >= c.Patience:
		return StopPatience, fmt.Sprintf("%d iteration(s) without a new best", r.j.SinceBest)
	case c.MaxConsecutiveCrashes > 0 && r.j.Crashes >= c.MaxConsecutiveCrashes:
		return StopCrashes, fmt.Sprintf("the agent crashed %d time(s) in a row", r.j.Crashes)
	case !r.dead.IsZero() && !r.now().Before(r.dead):
		return StopDeadline, "deadline " + r.dead.Local().Format("2006-01-02 15:04")
	}
	return "", ""
}

// fail ends the run on an error; an interruption is a stop like the others.
func (r *runner) fail(started time.Time, err error) (*Summary, error) {
	if errors.Is(err, context.Canceled) {
		return r.finish(StopInterrupted, "SIGINT or SIGTERM during the gate; hgate loop --resume gates the agent's work again", started, err)
	}
	return r.finish(StopError, err.Error(), started, err)
}

// finish writes summary.json and returns it with err.
func (r *runner) finish(reason, detail string, started time.Time, err error) (*Summary, error) {
	r.j.StopReason, r.j.StopDetail = reason, detail
	if serr := r.save(); serr != nil && err == nil {
		err = serr
	}
	s := r.summary()
	s.Seconds = secs(r.now().Sub(started))
	if werr := writeJSON(filepath.Join(r.dir, "summary.json"), s); werr != nil && err == nil {
		err = werr
	}
	fmt.Fprintf(r.log, "[loop] stopped: %s (%s); %d kept, %d rejected; summary: %s\n",
		reason, detail, s.Kept, s.Rejected, filepath.Join(r.dir, "summary.json"))
	return s, err
}

func (r *runner) summary() *Summary {
	s := &Summary{
		RunID: r.j.RunID, Started: r.j.Started, Finished: r.now().UTC().Format(time.RFC3339),
		Baseline: r.j.Baseline, BestAtStart: r.j.BestAtStart, Iterations: r.j.Iterations,
		StopReason: r.j.StopReason, StopDetail: r.j.StopDetail, Sandbox: r.j.Sandbox,
	}
	if s.Iterations == nil {
		s.Iterations = []Iteration{}
	}
	s.Best, _ = r.best()
	if s.Best != nil && s.BestAtStart != nil {
		s.Improvement = round4(*s.Best - *s.BestAtStart)
	}
	for _, it := range s.Iterations {
		switch it.Outcome {
		case "kept":
			s.Kept++
		case "rejected":
			s.Rejected++
		}
	}
	return s
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func secs(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// iterate runs (or, resumed, finishes) one iteration.
func (r *runner) iterate(ctx context.Context, resumed bool) error {
	j := r.j
	n := j.Next
	if !resumed {
		head, _, err := r.repo.Head()
		if err != nil {
			return err
		}
		best, err := r.best()
		if err != nil {
			return err
		}
		j.Current = &Iteration{Iteration: n, BestBefore: best, Reasons: []string{}}
		j.PreHead, j.Repair, j.CommitParent = head.String(), 0, ""
		j.IterStarted = r.now().UTC().Format(time.RFC3339Nano)
		if err := os.MkdirAll(r.iterDir(n), 0o755); err != nil {
			return err
		}
		if err := r.phase("agent"); err != nil {
			return err
		}
	} else {
		j.Current.Resumed = true
		// The previous hgate was killed, maybe holding a ref lock.
		r.repo.BreakRefLocks(r.attemptRef(n), ledger.Ref, gitguard.GatedRef, gate.BestRef)
	}
	it := j.Current
	iterStart, _ := time.Parse(time.RFC3339Nano, j.IterStarted)

	var rep *gate.Report
	for {
		switch j.Phase {
		case "agent":
			if resumed {
				// hgate died while the agent ran: end what is left of it, gate its work.
				killLeftover(j.AgentPID, j.AgentStart, "HGATE_RUN_ID="+j.RunID)
				it.Agent, it.AgentDetail = AgentInterrupted, "hgate stopped while the agent ran; resumed"
				resumed = false
				if err := r.checkRefs(n); err != nil {
					return err
				}
			} else if err := r.runAgent(ctx, n, j.Repair); err != nil {
				return err
			}
			if err := r.phase("gate"); err != nil {
				return err
			}
		case "gate":
			var err error
			rep, err = r.gate(ctx, n)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					// Interrupted mid-gate: leave the agent's work for --resume to gate.
					return err
				}
				return fmt.Errorf("iteration %d: gate: %w", n, err)
			}
			resumed = false
			if rep == nil { // nothing changed
				it.Outcome = "unchanged"
				if err := r.phase("learn"); err != nil {
					return err
				}
				continue
			}
			v := rep.Verdict
			it.Verdict, it.ValScore, it.Reasons = &v, rep.ValScore, rep.Reasons
			if it.Reasons == nil {
				it.Reasons = []string{}
			}
			j.LastReport = rep
			if rep.Passed() {
				head, _, err := r.repo.Head()
				if err != nil {
					return err
				}
				j.CommitParent = head.String()
				if err := r.phase("commit"); err != nil {
					return err
				}
				continue
			}
			if j.Repair < r.cfg.RepairAttempts && len(j.Tamper) == 0 && ctx.Err() == nil && (r.dead.IsZero() || r.now().Before(r.dead)) {
				j.Repair++
				it.Repairs = j.Repair
				if err := r.phase("agent"); err != nil {
					return err
				}
				continue
			}
			if err := r.phase("attempt"); err != nil {
				return err
			}
		case "commit":
			if err := r.commit(n); err != nil {
				return err
			}
			if err := r.phase("record"); err != nil {
				return err
			}
		case "record":
			rr, err := gate.Record(r.env, gate.RecordOptions{})
			if err != nil {
				return fmt.Errorf("iteration %d: record: %w", n, err)
			}
			it.Outcome = "kept"
			// On a resumed record the row may exist already; the numbers decide.
			it.NewBest = rr.NewBest || it.BestBefore == nil || (it.ValScore != nil && *it.ValScore > *it.BestBefore)
			if err := r.phase("learn"); err != nil {
				return err
			}
		case "attempt":
			restored, err := r.saveAttempt(n)
			if err != nil {
				return err
			}
			next := "restore"
			if restored {
				it.Outcome, next = "rejected", "learn"
			}
			if err := r.phase(next); err != nil {
				return err
			}
		case "restore":
			if err := r.repo.RestoreHead(r.gopts); err != nil {
				return fmt.Errorf("iteration %d: restore HEAD: %w", n, err)
			}
			it.Outcome = "rejected"
			if err := r.phase("learn"); err != nil {
				return err
			}
		case "learn":
			if err := r.learn(it); err != nil {
				return err
			}
			if it.Outcome == "kept" && it.NewBest {
				j.SinceBest = 0
			} else {
				j.SinceBest++
			}
			if it.Agent == AgentCrashed || it.Agent == AgentTimeout && it.Outcome != "kept" {
				j.Crashes++
			} else {
				j.Crashes = 0
			}
			it.Seconds = secs(r.now().Sub(iterStart))
			j.Iterations = append(j.Iterations, *it)
			j.Current, j.Phase, j.Next = nil, "", n+1
			j.Refs, j.Tamper, j.LearningNo = nil, nil, 0
			if err := r.save(); err != nil {
				return err
			}
			s := r.summary()
			s.StopReason = "running"
			if err := writeJSON(filepath.Join(r.dir, "summary.json"), s); err != nil {
				return err
			}
			r.report(*it)
			return nil
		default:
			return fmt.Errorf("%s: phase %q is not one hgate writes", filepath.Join(r.dir, "journal.json"), j.Phase)
		}
	}
}

// report prints the iteration's line on the log and its object on the stream.
func (r *runner) report(it Iteration) {
	var b strings.Builder
	fmt.Fprintf(&b, "[loop] iteration %d: %-9s", it.Iteration, it.Outcome)
	if it.ValScore != nil {
		fmt.Fprintf(&b, " val_score=%.4f", *it.ValScore)
	}
	if it.NewBest {
		b.WriteString(" (new best)")
	}
	if it.Commit != "" {
		fmt.Fprintf(&b, " commit %s", it.Commit[:7])
	}
	if it.AttemptRef != "" {
		fmt.Fprintf(&b, " kept in %s", it.AttemptRef)
	}
	fmt.Fprintf(&b, "  agent %s", it.Agent)
	if it.AgentDetail != "" {
		fmt.Fprintf(&b, " (%s)", it.AgentDetail)
	}
	if len(it.Reasons) > 0 {
		fmt.Fprintf(&b, "; %s", strings.Join(it.Reasons, "; "))
	}
	fmt.Fprintln(r.log, b.String())
	if r.opts.Stream != nil {
		enc := json.NewEncoder(r.opts.Stream)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(it)
	}
}

// runAgent writes the prompt and runs the agent once (main attempt or repair).
func (r *runner) runAgent(ctx context.Context, n, repair int) error {
	j, it := r.j, r.j.Current
	dir := r.iterDir(n)
	if repair > 0 {
		dir = filepath.Join(dir, "repair-"+strconv.Itoa(repair))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	program, err := os.ReadFile(filepath.Join(r.repo.Root(), r.cfg.Program))
	if err != nil {
		return fmt.Errorf("loop: program: %w", err)
	}
	s, err := suite.Load(filepath.Join(r.ws, "suite.json"))
	if err != nil {
		return err
	}
	msgRel, _ := filepath.Rel(r.repo.Root(), filepath.Join(r.ws, MessageFileName))
	in := promptInput{
		Program: string(program), ProgramFile: r.cfg.Program, Iteration: n, Iterations: r.cfg.Iterations,
		RunID: j.RunID, Best: it.BestBefore, SuiteSize: len(s.Tasks), Allow: r.env.Config.Allow,
		MessageFile: filepath.ToSlash(msgRel), Repair: repair,
		Learnings: tail(filepath.Join(r.ws, record.LearningsFileName), learningsTail),
	}
	if repair > 0 {
		in.Previous = j.LastReport
	} else if len(j.Iterations) > 0 {
		last := j.Iterations[len(j.Iterations)-1]
		in.PrevOutcome = last.Outcome
		if last.Outcome == "rejected" {
			in.Previous = j.LastReport
		}
	}
	promptFile := filepath.Join(dir, "prompt.txt")
	if err := writeAtomic(promptFile, []byte(buildPrompt(in))); err != nil {
		return err
	}
	args, err := Command(r.cfg.Agent, promptFile)
	if err != nil {
		return err
	}
	msgFile := filepath.Join(r.ws, MessageFileName)
	if repair == 0 {
		if err := os.Remove(msgFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	jl, err := r.openJail()
	if err != nil {
		return err
	}
	defer jl.close()
	a := &agentRun{
		Args: args, Dir: r.repo.Root(), Sandbox: jl.policy,
		Env: append(os.Environ(),
			"HGATE_PROMPT_FILE="+promptFile, "HGATE_MESSAGE_FILE="+msgFile,
			"HGATE_ITERATION="+strconv.Itoa(n), "HGATE_RUN_ID="+j.RunID, "HGATE_REPAIR="+strconv.Itoa(repair),
			"TMPDIR="+jl.tmp, r.srv.Env()),
		Ended: r.srv.Drain,
		Stdin: promptFile, Stdout: filepath.Join(dir, "agent.stdout"), Stderr: filepath.Join(dir, "agent.stderr"),
		Timeout: r.cfg.AttemptTimeout, Deadline: r.dead, Grace: r.opts.Grace,
		Started: func(pid int) {
			r.refsMu.Lock() // the agent's served commands may write the journal too
			defer r.refsMu.Unlock()
			j.AgentPID, j.AgentStart = pid, processStart(pid)
			_ = r.save()
		},
	}
	snap, err := r.repo.SnapshotRefs(refsPrefix)
	if err != nil {
		return err
	}
	r.refsMu.Lock()
	j.Refs = snap
	err = r.save()
	r.refsMu.Unlock()
	if err != nil {
		return err
	}
	r.unlock()
	if len(r.cfg.Agent) == 1 {
		a.Env = append(a.Env, presetEnv(strings.TrimSpace(r.cfg.Agent[0]), jl.policy != nil, jl.tmp)...)
	}
	stopWatch := r.watchAgent(n, a.Stdout)
	res := a.run(ctx)
	stopWatch()
	if data, err := os.ReadFile(filepath.Join(jl.tmp, transcriptName)); err == nil {
		_ = writeAtomic(filepath.Join(dir, transcriptName), data)
	}
	// The agent's work is gated even when ctx was cancelled meanwhile: take the lock
	// back without giving up on a cancelled ctx.
	if err := r.lock(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	if err := r.checkRefs(n); err != nil {
		return err
	}
	j.AgentPID, j.AgentStart = 0, ""
	it.Agent, it.AgentDetail = res.Outcome, res.Detail
	it.AgentSeconds += secs(res.Duration)
	return nil
}

// gate runs the gate on what the agent left and keeps its report as
// gate.json. A nil report means the agent changed nothing at all.
func (r *runner) gate(ctx context.Context, n int) (*gate.Report, error) {
	j, it := r.j, r.j.Current
	restored, err := r.env.RestoreState()
	if err != nil {
		return nil, err
	}
	if len(restored) > 0 {
		fmt.Fprintf(r.log, "[loop] iteration %d: the agent changed hgate's state (%s); restored from the ledger\n", n, strings.Join(restored, ", "))
	}
	if len(j.Tamper) > 0 {
		rep := &gate.Report{Verdict: "reject", Reasons: []string{
			"the agent changed hgate's refs behind its back (put back): " + strings.Join(j.Tamper, "; "),
		}}
		return rep, r.writeGateJSON(n, rep)
	}
	head, tree, err := r.repo.Head()
	if err != nil {
		return nil, err
	}
	if head.String() == j.PreHead {
		cand, vs, err := r.repo.Inspect(r.gopts)
		if err != nil {
			return nil, err
		}
		if cand == tree && len(vs) == 0 {
			return nil, nil
		}
	}
	gctx := ctx
	if it.Agent == AgentInterrupted && ctx.Err() != nil {
		// The agent was stopped by SIGINT/SIGTERM: its work is still gated.
		gctx = context.WithoutCancel(ctx)
	}
	start := r.now()
	// A receipt of this tree that this process did not write is not reused: without the
	// sandbox, the agent may have produced it from a clean room it raced.
	rep, err := gate.Run(gctx, r.env, gate.Options{Reuse: gate.WroteReceipt})
	it.GateSeconds += secs(r.now().Sub(start))
	if err != nil {
		return nil, err
	}
	if err := r.writeGateJSON(n, rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// writeGateJSON keeps the gate's report in the iteration's folder (or its repair's).
func (r *runner) writeGateJSON(n int, rep *gate.Report) error {
	dir := r.iterDir(n)
	if r.j.Repair > 0 {
		// A run resumed at a repair's agent phase may not have made the folder yet.
		dir = filepath.Join(dir, "repair-"+strconv.Itoa(r.j.Repair))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(dir, "gate.json"), rep)
}

// commit commits the gated candidate, or finishes a commit a crash interrupted.
func (r *runner) commit(n int) error {
	j, it := r.j, r.j.Current
	parent := plumbing.NewHash(j.CommitParent)
	head, _, err := r.repo.Head()
	if err != nil {
		return err
	}
	if head != parent {
		// A resumed run: the branch may already hold the commit.
		c, err := r.repo.Commit(head)
		if err != nil {
			return err
		}
		if len(c.ParentHashes) != 1 || c.ParentHashes[0] != parent {
			return fmt.Errorf("iteration %d: HEAD moved to %s while committing; expected %s or a child of it", n, head.String()[:7], parent.String()[:7])
		}
		if err := r.repo.SyncIndex(parent); err != nil {
			return err
		}
		it.Commit, it.Message = head.String(), firstLine(c.Message)
		return nil
	}
	msg := r.message(n, it)
	a := r.author
	a.When = r.now()
	c, err := r.repo.CommitCandidate(r.gopts, msg+"\n", a)
	if err != nil {
		return fmt.Errorf("iteration %d: commit: %w", n, err)
	}
	it.Commit, it.Message = c.String(), msg
	return nil
}

// message is the first line of the agent's message file, else a generated one.
func (r *runner) message(n int, it *Iteration) string {
	if data, err := os.ReadFile(filepath.Join(r.ws, MessageFileName)); err == nil {
		if l := strings.TrimSpace(firstLine(string(data))); l != "" {
			return l
		}
	}
	score := "?"
	if it.ValScore != nil {
		score = fmt.Sprintf("%.4f", *it.ValScore)
	}
	return fmt.Sprintf("hgate loop %s iteration %d: val_score %s", r.j.RunID, n, score)
}

func writeAtomic(path string, data []byte) error { return statefile.WriteAtomic(path, data) }

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimRight(l, "\r")
}

// saveAttempt keeps the rejected work under its ref and takes back any
// commit the agent made on the branch. When the branch did not move it
// restores the worktree too, from the same walk, and says so; otherwise the
// restore phase does it against the branch as it was.
func (r *runner) saveAttempt(n int) (restored bool, err error) {
	j, it := r.j, r.j.Current
	ref := r.attemptRef(n)
	existing, err := r.repo.Ref(ref)
	if err != nil {
		return false, err
	}
	pre := plumbing.NewHash(j.PreHead)
	head, _, err := r.repo.Head()
	if err != nil {
		return false, err
	}
	if existing.IsZero() {
		msg := fmt.Sprintf("hgate loop %s iteration %d: rejected\n\n%s\n", j.RunID, n, strings.Join(it.Reasons, "\n"))
		a := r.author
		a.When = r.now()
		if head == pre {
			if _, err := r.repo.SaveAttemptAndRestore(r.gopts, ref, msg, a); err != nil {
				return false, fmt.Errorf("iteration %d: save attempt and restore HEAD: %w", n, err)
			}
			it.AttemptRef = ref
			return true, nil
		}
		if _, err := r.repo.SaveAttempt(r.gopts, ref, msg, a); err != nil {
			return false, fmt.Errorf("iteration %d: save attempt: %w", n, err)
		}
	}
	it.AttemptRef = ref
	if head != pre {
		// The agent committed: the branch goes back; its commits stay reachable from the attempt.
		if err := r.repo.MoveBranch(pre, head); err != nil {
			return false, fmt.Errorf("iteration %d: take back the agent's commits: %w", n, err)
		}
	}
	return false, nil
}

// learn appends the iteration's learnings.md entry once.
func (r *runner) learn(it *Iteration) error {
	path := filepath.Join(r.ws, record.LearningsFileName)
	before := 0.0
	if it.BestBefore != nil {
		before = *it.BestBefore
	}
	after := before
	if it.ValScore != nil {
		after = *it.ValScore
	}
	// Entries are numbered on from what the file holds, across runs. The number is in the
	// journal before the entry is written, so a resumed learn phase finds its own entry.
	if r.j.LearningNo == 0 {
		r.j.LearningNo = record.LearningsCount(path) + 1
		if err := r.save(); err != nil {
			return err
		}
	}
	l := record.Learning{
		Iteration: r.j.LearningNo, Before: before, After: after, Kept: it.Outcome == "kept",
		Unscored: it.ValScore == nil && it.Outcome != "unchanged",
	}
	switch it.Outcome {
	case "kept":
		l.WhatChanged = fmt.Sprintf("%s (commit %s)", it.Message, it.Commit[:7])
		l.Worked = fmt.Sprintf("kept: the gate passed with val_score %.4f", after)
		if it.NewBest {
			l.Worked += " (new best)"
		}
	case "rejected":
		l.WhatChanged = "attempt kept in " + it.AttemptRef + " and reverted"
		l.Worked = "rejected: " + strings.Join(it.Reasons, "; ")
	default:
		l.WhatChanged = "nothing: the agent left no change"
	}
	if it.Agent != AgentOK {
		l.Worked += fmt.Sprintf(" (agent %s: %s)", it.Agent, it.AgentDetail)
	}
	if r.j.Sandbox == SandboxOff {
		l.Worked += " (the agent ran unsandboxed)"
	}
	// A crash after the append but before the journal moved on must not write it twice.
	if data, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(data), l.String()) {
		return nil
	}
	return record.AppendLearning(path, l)
}

// refsPrefix holds every ref hgate trusts: the gated and best commits, the ledger, the
// saved attempts.
const refsPrefix = "refs/hgate/"

// checkRefs compares refs/hgate/* with the snapshot taken before the agent's phase (or
// after the last command served to it). Anything else that moved them was the agent
// working around hgate: they are put back, and the attempt is rejected.
func (r *runner) checkRefs(n int) error {
	r.refsMu.Lock()
	defer r.refsMu.Unlock()
	return r.checkRefsLocked(n)
}

func (r *runner) checkRefsLocked(n int) error {
	j := r.j
	if j.Refs == nil {
		return nil // a journal from before the check existed
	}
	now, err := r.repo.SnapshotRefs(refsPrefix)
	if err != nil {
		return err
	}
	changed := j.Refs.Changed(now)
	if len(changed) > 0 {
		if err := r.repo.RestoreRefs(refsPrefix, j.Refs); err != nil {
			return fmt.Errorf("iteration %d: put back the refs the agent changed: %w", n, err)
		}
		fmt.Fprintf(r.log, "[loop] iteration %d: the agent changed hgate's refs behind its back; put back: %s\n", n, strings.Join(changed, "; "))
		j.Tamper = append(j.Tamper, changed...)
	}
	if !r.serving {
		// The agent's phase is over: hgate's own work moves the refs from here on.
		j.Refs = nil
	}
	return r.save()
}

// served runs fn, a command the agent asked the loop for, so that it sees hgate's refs
// as hgate left them (what moved behind hgate's back first is put back and counted
// against the attempt), and takes what the command itself wrote (the ledger) as the
// new expected state.
func (r *runner) served(fn func()) {
	r.refsMu.Lock()
	defer r.refsMu.Unlock()
	if r.j != nil && r.j.Refs != nil {
		r.serving = true
		err := r.checkRefsLocked(r.j.Next)
		r.serving = false
		if err != nil {
			fmt.Fprintf(r.log, "[loop] %v\n", err)
		}
	}
	fn()
	if r.j == nil || r.j.Refs == nil {
		return
	}
	if snap, err := r.repo.SnapshotRefs(refsPrefix); err == nil {
		r.j.Refs = snap
		_ = r.save()
	}
}

// crashError is the error of a run stopped by consecutive agent crashes: the last
// attempt's outcome and the tail of its stderr, which is where an agent says why.
func (r *runner) crashError() error {
	last := r.j.Iterations[len(r.j.Iterations)-1]
	dir := r.iterDir(last.Iteration)
	if last.Repairs > 0 {
		dir = filepath.Join(dir, "repair-"+strconv.Itoa(last.Repairs))
	}
	path := filepath.Join(dir, "agent.stderr")
	msg := fmt.Sprintf("loop: the agent failed %d time(s) in a row (last: %s %s); its stderr (%s) ends:", r.j.Crashes, last.Agent, last.AgentDetail, path)
	t := strings.TrimRight(tail(path, 2000), "\n")
	if t == "" {
		t = "(nothing)"
	}
	var lines []string
	for _, l := range strings.Split(t, "\n") {
		lines = append(lines, "  "+l)
	}
	if n := len(lines); n > 10 {
		lines = lines[n-10:]
	}
	return fmt.Errorf("%s\n%s", msg, strings.Join(lines, "\n"))
}

// agentWatchEvery is how often the loop says, with progress on, that the agent still runs.
var agentWatchEvery = 30 * time.Second

// watchAgent tells a watching human (progress on: a terminal, or -v) that the agent is
// running, where its output goes, and then every agentWatchEvery for how long and what it
// printed last. The returned func stops it.
func (r *runner) watchAgent(n int, stdout string) (stop func()) {
	w := r.env.Progress
	if w == nil {
		return func() {}
	}
	start := r.now()
	fmt.Fprintf(w, "[loop] iteration %d: agent running; its output: %s\n", n, stdout)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(agentWatchEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				last := lastLine(tail(stdout, 4096))
				if len(last) > 100 {
					last = last[:100] + "…"
				}
				fmt.Fprintf(w, "[loop] iteration %d: agent running for %s; last output: %s\n", n, r.now().Sub(start).Round(time.Second), last)
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// lastLine is the last non-empty line of s, or "(none yet)".
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "(none yet)"
}
