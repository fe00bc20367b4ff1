package loop

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/agentout"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/human"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/scratch"
)

// preflightRun is the runner at work on the preflight (--preflight, and a run's first
// check of the agent's CLI), in a scratch worktree of its own.
type preflightRun struct{ *runner }

// PreflightOptions are what Preflight needs: the loop's settings, as Run takes them.
type PreflightOptions struct {
	Env  *gate.Env
	Loop config.Loop
	Log  io.Writer
	// Grace is the time between SIGTERM and SIGKILL for the agent; 0: 5s.
	Grace time.Duration
	// Timeout bounds the agent's one turn; 0: loop.attempt_timeout, at most PreflightTimeout.
	Timeout time.Duration
}

// PreflightTimeout is the longest the agent's one turn may take by default.
const PreflightTimeout = 5 * time.Minute

// Preflight is what starting the agent once found (hgate check's agent level, and the
// first thing a new hgate loop run does).
type Preflight struct {
	Agent   string       `json:"agent"`   // its CLI's adapter: claude, codex, aider, custom
	Sandbox string       `json:"sandbox"` // "landlock ABI N" or "off"
	Outcome AgentOutcome `json:"outcome"`
	Detail  string       `json:"detail,omitempty"`
	// ReachedModel: claude or codex reported a finished model turn; an agent whose output
	// hgate does not read (custom, aider) exited 0.
	ReachedModel bool `json:"reached_model"`
	// ReadOutput: hgate read the agent's output (claude's stream-json, codex's --json).
	ReadOutput bool   `json:"read_output"`
	Message    string `json:"message,omitempty"` // the agent's last words, as its output has them
	// Wrote is the allowed file hgate itself appended a newline to inside the agent's
	// sandbox; WriteError says why it could not.
	Wrote      string       `json:"wrote,omitempty"`
	WriteError string       `json:"write_error,omitempty"`
	Gate       *gate.Answer `json:"gate,omitempty"` // Steps 0 and 1 on what was written
	GateError  string       `json:"gate_error,omitempty"`
	// GateSkipped says why Steps 0–1 did not run, when that is expected: before prepare
	// there is no split for Step 1 to read.
	GateSkipped string  `json:"gate_skipped,omitempty"`
	SpendUSD    float64 `json:"spend_usd"`
	Tokens      int64   `json:"spend_tokens"`
}

// Problem is the one line saying why the agent cannot run the loop, "" when it can: it
// did not start or end well, did not reach its model, or its sandbox kept an allowed file
// from being written.
func (p *Preflight) Problem() string {
	switch {
	case strings.HasPrefix(p.Detail, notStarted):
		return fmt.Sprintf("the agent (%s) %s", p.Agent, oneLine(p.Detail))
	case p.Outcome != AgentOK:
		return fmt.Sprintf("the agent (%s) %s: %s", p.Agent, p.Outcome, oneLine(p.Detail))
	case !p.ReachedModel:
		return fmt.Sprintf("the agent (%s) ended without finishing a model turn: %s", p.Agent, oneLine(orSilent(p.Message)))
	case p.WriteError != "":
		return fmt.Sprintf("an allowed file cannot be written in the agent's sandbox: %s", oneLine(p.WriteError))
	}
	return ""
}

// preflightPrompt asks for one turn and no work: the check is that the agent starts and
// reaches its model; hgate writes the file itself.
const preflightPrompt = "This is hgate's preflight check of your set-up. Do not run any command and do not edit any file. Reply with the single word READY and end.\n"

// RunPreflight starts the configured agent once, in the sandbox a loop's agent gets, in a
// scratch linked worktree at HEAD, with a prompt that asks for one turn and no work; then
// hgate appends a newline to an allowed file inside that same sandbox (its own write, not
// the model's) and runs the gate's Steps 0 and 1 on the worktree without recording
// anything. The worktree and every file of the run are removed after; nothing is
// committed. An error means it could not check.
func RunPreflight(ctx context.Context, opts PreflightOptions) (*Preflight, error) {
	r := &runner{opts: Options{Env: opts.Env, Loop: opts.Loop, Log: opts.Log, Grace: opts.Grace},
		env: opts.Env, cfg: opts.Loop, repo: opts.Env.Repo, log: opts.Log, trust: gate.NewTrust()}
	r.defaults()
	state, err := sandboxState(r.cfg.Sandbox)
	if ns := (*NotStarted)(nil); err != nil && !errors.As(err, &ns) {
		return nil, fmt.Errorf("loop: %w: run hgate loop --no-sandbox to run it as your own user, able to write anything you can (see docs/security/threat-model.md)", err)
	}
	if err != nil {
		return nil, err
	}
	base, err := scratch.MkdirTemp(os.TempDir(), "hgate-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	r.dir, r.agentTmp = filepath.Join(base, "run"), os.TempDir()
	r.j = &journal{RunID: "preflight", Sandbox: state}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	pr := preflightRun{r}
	wt, head, cleanup, err := pr.scratchWorktree(filepath.Join(base, "worktree"))
	if err != nil {
		return nil, err
	}
	defer cleanup()
	p := &Preflight{Agent: cmp.Or(r.cli().Name(), "custom"), Sandbox: state}
	return p, pr.preflight(ctx, p, wt, head, opts.Timeout)
}

// scratchWorktree makes a detached linked worktree of HEAD at dir (hgate writes its files)
// and returns its cleanup.
func (r preflightRun) scratchWorktree(dir string) (string, plumbing.Hash, func(), error) {
	if err := r.openGit(); err != nil {
		return "", plumbing.ZeroHash, nil, err
	}
	if r.wts == nil {
		return "", plumbing.ZeroHash, nil, fmt.Errorf("loop: preflight: %w (the scratch worktree needs git 2.38 or later on PATH)", gitguard.ErrNoGit)
	}
	head, _, err := r.repo.Head()
	if err != nil {
		return "", plumbing.ZeroHash, nil, err
	}
	if err := r.wts.Add(dir, head, r.env.Config.Gate.MaxFileBytes); err != nil {
		return "", plumbing.ZeroHash, nil, fmt.Errorf("loop: preflight: scratch worktree: %w", err)
	}
	return dir, head, func() {
		if r.wts.Remove(dir) != nil {
			os.RemoveAll(dir)
		}
		_ = r.wts.Prune()
	}, nil
}

// preflight runs the agent's one turn, hgate's write and Steps 0-1 into p.
func (r preflightRun) preflight(ctx context.Context, p *Preflight, wt string, head plumbing.Hash, timeout time.Duration) error {
	srv, err := agentapi.Listen(ctx, agentapi.Options{Exec: refuseServe, Prefix: scratch.Prefix("hgate-check-")})
	if err != nil {
		return err
	}
	defer srv.Close()
	if timeout <= 0 {
		timeout = min(r.cfg.AttemptTimeout, PreflightTimeout)
		if timeout <= 0 {
			timeout = PreflightTimeout
		}
	}
	msg := filepath.Join(r.dir, messageName)
	ss, res, out, err := r.runSession(ctx, sessionSpec{Phase: "preflight", Dir: r.dir, Worktree: wt, Timeout: timeout, Server: srv,
		Message: msg, Prompt: func(string) string { return preflightPrompt },
		Jail: jailSpec{Worktree: wt, Protected: []string{filepath.Join(wt, ".git"), string(r.ws)}, Files: []string{msg}}}, nil, nil)
	if err != nil {
		return err // a process of it may live: nothing else runs (fail closed)
	}
	defer ss.close()
	p.Outcome, p.Detail, p.Message = res.Outcome, res.Detail, out.Message
	p.ReachedModel, p.ReadOutput = reachedModel(res, out), readsTurns(out)
	p.SpendUSD, p.Tokens = r.book().iterationSpend(&Iteration{}, out)
	if p.Outcome != AgentOK || !p.ReachedModel {
		return nil
	}
	if p.Wrote, err = r.probeWrite(ctx, ss, wt, head); err != nil {
		p.WriteError = err.Error()
		return nil
	}
	if _, err := os.Stat(r.ws.Split()); errors.Is(err, fs.ErrNotExist) {
		p.GateSkipped = "the workspace is not prepared yet: Steps 0-1 run on the agent's write after hgate prepare"
		return ctx.Err()
	}
	p.Gate, err = r.preflightGate(ctx, wt, head)
	if err != nil {
		p.GateError = err.Error()
	}
	return ctx.Err()
}

// reachedModel: for an agent whose output hgate reads as model turns (claude, codex), a
// model turn that ended without failing; for any other (aider, a custom command, also one
// printing HGATE_SESSION= lines), an exit status of 0.
func reachedModel(res agentResult, out agentout.Run) bool {
	if !readsTurns(out) {
		return res.Outcome == AgentOK
	}
	return out.Final && !out.Failed
}

// readsTurns: hgate reads the agent's model turns from its output (claude, codex).
func readsTurns(out agentout.Run) bool {
	return out.Format == agentout.FormatClaude || out.Format == agentout.FormatCodex
}

// refuseServe answers a command the agent sends during the preflight: none is served.
func refuseServe(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "hgate: the preflight check serves no commands")
	return 2
}

// probeWrite appends a newline to the first file of head's tree that allow matches, by a
// process started in the session's own sandbox (its policy and environment): the write
// the agent would make. It returns the file's slash path.
func (r preflightRun) probeWrite(ctx context.Context, ss *session, wt string, head plumbing.Hash) (string, error) {
	target, err := r.allowedFile(head)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `printf '\n' >> "$1"`, "sh", filepath.FromSlash(target))
	cmd.Dir, cmd.Env = wt, ss.run.Env
	if ss.run.Sandbox != nil {
		if err := sandbox.Wrap(cmd, *ss.run.Sandbox); err != nil {
			return target, fmt.Errorf("%s: cannot start a process in the agent's sandbox: %w", target, err)
		}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return target, fmt.Errorf("%s: %v: %s", target, err, strings.TrimSpace(string(out)))
	}
	return target, nil
}

// allowedFile is the first path (sorted) of tree head that allow matches: a file or a
// symlink, as the agent would find it.
func (r preflightRun) allowedFile(head plumbing.Hash) (string, error) {
	files, err := r.repo.BlobHashesAt(head)
	if err != nil {
		return "", err
	}
	m := gitguard.NewMatcher(r.env.Config.Allow)
	var paths []string
	for p := range files {
		if m.Match(p, false) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		return "", errors.New("allow matches no committed file, so hgate has none to write (commit the files the agent is to improve)")
	}
	slices.Sort(paths)
	return paths[0], nil
}

// preflightGate runs Steps 0 and 1 on the scratch worktree as a gate the agent asks for
// runs them (Pending: Step 2 deferred, no state file written).
func (r preflightRun) preflightGate(ctx context.Context, wt string, head plumbing.Hash) (*gate.Answer, error) {
	repo, err := gitguard.Open(wt)
	if err != nil {
		return nil, err
	}
	env := &gate.Env{Config: r.env.Config, Repo: r.repo, Log: r.log, CleanRoom: r.env.CleanRoom,
		Worktree: &gate.Worktree{Repo: repo, Base: head, Traces: filepath.Join(r.dir, tracesName)}}
	return gate.Run(ctx, env, gate.Options{Pending: true})
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

func orSilent(s string) string {
	if s == "" {
		return "it printed nothing hgate could read"
	}
	return s
}

// preflightStart runs the preflight before a new run when Options.Preflight asks for it:
// a problem is the run's refusal to start, in the refusals' one shape.
func (r preflightRun) preflightStart(ctx context.Context) error {
	if !r.opts.Preflight {
		return nil
	}
	p, err := RunPreflight(ctx, PreflightOptions{Env: r.env, Loop: r.cfg, Log: r.log, Grace: r.opts.Grace})
	if err != nil {
		return refuseStart(err, "loop.agent", "hgate check --level agent shows more; hgate loop --no-preflight skips the check")
	}
	if msg := p.Problem(); msg != "" {
		return &NotStarted{Reason: "preflight: " + msg, Where: "loop.agent",
			Fix: "hgate check --level agent shows more; hgate loop --no-preflight skips the check"}
	}
	fmt.Fprintf(r.log, "[loop] preflight: %s started, reached its model and ended; hgate wrote %s in its sandbox (spent %s, %s, not counted in the run's budget)\n",
		p.Agent, p.Wrote, human.USD(p.SpendUSD), human.Tokens(p.Tokens))
	return nil
}
