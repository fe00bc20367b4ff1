package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
)

// Command resolves the configured agent to its CLI's command line (agentcli: a
// registered one-word name, a one-element command line run by sh -c, or an argument
// vector), with {prompt_file} replaced by the prompt's path in every argument.
func Command(agent []string, promptFile string) ([]string, error) {
	if len(agent) == 0 {
		return nil, errors.New("loop: agent: no agent configured (set loop.agent in hgate.yaml or pass --agent)")
	}
	return agentcli.Command(agentcli.For(agent), promptFile), nil
}

// cli is the configured agent's adapter.
func (r *runner) cli() agentcli.CLI { return agentcli.For(r.cfg.Agent) }

// notStarted begins the detail of an agent that crashed before it ran (its program not
// found, the sandbox refused): the loop stops at once, trying again cannot help.
const notStarted = "did not start: "

// agentRun is one agent process.
type agentRun struct {
	Args     []string
	Dir      string
	Env      []string
	Stdin    string // file
	Stdout   string // file
	Stderr   string // file
	Timeout  time.Duration
	Deadline time.Time       // zero: none; the agent is stopped there too
	Grace    time.Duration   // between SIGTERM and SIGKILL
	Started  func(pid int)   // called once the process runs (journal)
	Sandbox  *sandbox.Policy // nil: unsandboxed
	// Net serves the listeners the sandbox brings back from the agent's network
	// namespace (its Listen), for as long as the agent runs.
	Net *agentNet
	// Ended is called once every process of the agent is gone (killed, in the sandbox
	// checked: see gone) and before the loop's orphans are reaped: the commands the loop
	// still runs for it are stopped first, so reaping cannot kill their tasks (the loop's
	// own children) unnoticed.
	Ended func()
	// KeepOrphans leaves the loop's orphans alone when the agent ends: they may be
	// another agent of its generation, still running; the generation reaps them once
	// every agent has ended.
	KeepOrphans bool
	// Tag is the agent's HGATE_AGENT_TAG: without the sandbox's namespace, the processes
	// that carry it are how the loop finds what the agent left running.
	Tag string
}

type agentResult struct {
	// Err: a process of the agent may still be alive after its phase; nothing the agent
	// must not see may run, so the loop stops (fail closed).
	Err      error
	Outcome  AgentOutcome
	ExitCode int // -1 when killed or not started
	Detail   string
	Duration time.Duration
}

// run starts the agent in its own process group and waits for it, stopping
// it at the timeout, the deadline or when ctx ends. When it has ended, every
// process of its group and every descendant that escaped into its own
// session is killed too.
func (a *agentRun) run(ctx context.Context) agentResult {
	start := time.Now()
	res := agentResult{ExitCode: -1}
	cmd := exec.Command(a.Args[0], a.Args[1:]...)
	cmd.Dir, cmd.Env = a.Dir, a.Env
	closeFiles, err := a.openFiles(cmd)
	if err != nil {
		return agentResult{Outcome: AgentCrashed, ExitCode: -1, Detail: err.Error()}
	}
	defer closeFiles()
	stderr := cmd.Stderr
	ch, err := a.wrap(cmd)
	if err != nil {
		fmt.Fprintf(stderr, "hgate: cannot sandbox the agent: %v\n", err)
		return agentResult{Outcome: AgentCrashed, ExitCode: -1, Detail: notStarted + err.Error(), Duration: time.Since(start)}
	}
	defer ch.Signal() // closes the shim's channel
	limit := a.limit()
	p, err := proc.Start(cmd, proc.Options{Timeout: limit, Grace: a.Grace})
	ch.Started()
	if err != nil {
		fmt.Fprintf(stderr, "hgate: cannot start the agent: %v\n", err)
		return agentResult{Outcome: AgentCrashed, ExitCode: -1, Detail: notStarted + err.Error(), Duration: time.Since(start)}
	}
	var ns *sandbox.Namespace
	if a.Sandbox != nil && a.Sandbox.Isolate {
		n, err := sandbox.NamespaceOf(p.Pid())
		if err != nil {
			_ = proc.Kill(p.Pid()) // the namespace's init: the kernel kills the rest
			p.Wait(ctx)
			return agentResult{Err: fmt.Errorf("loop: agent: %w", err), Outcome: AgentCrashed, ExitCode: -1, Detail: err.Error(), Duration: time.Since(start)}
		}
		ns = &n
	}
	stopNet, err := a.serveNet(ch)
	if err != nil {
		fmt.Fprintf(stderr, "hgate: %v\n", err)
		_ = proc.Kill(p.Pid()) // the namespace's init: the kernel kills the rest
		p.Wait(ctx)
		return agentResult{Outcome: AgentCrashed, ExitCode: -1, Detail: notStarted + err.Error(), Duration: time.Since(start)}
	}
	defer stopNet()
	if a.Started != nil {
		a.Started(p.Pid())
	}
	pr := p.Wait(ctx)
	res.Err = a.ended(ns)
	res.Duration = time.Since(start)
	res.Outcome, res.ExitCode, res.Detail = outcomeOf(pr, limit)
	return res
}

// ended ends the rest of the agent once its process has ended. Every process of the
// agent is killed before the loop waits for the commands they asked for (a daemon could
// hold one up by never reading its answer), and before anything it must not see runs. In
// the sandbox the shim was the init of the agent's PID namespace: the kernel killed the
// rest when it ended; gone checks. An error: a process of it may still be alive.
func (a *agentRun) ended(ns *sandbox.Namespace) error {
	err := a.gone(ns)
	if a.Ended != nil {
		a.Ended()
	}
	if !a.KeepOrphans {
		proc.ReapOrphans()
	}
	return err
}

// openFiles gives cmd the agent's stdin, stdout and stderr files, and returns what
// closes them.
func (a *agentRun) openFiles(cmd *exec.Cmd) (func(), error) {
	stdin, err := os.Open(a.Stdin)
	if err != nil {
		return nil, err
	}
	stdout, err := os.Create(a.Stdout)
	if err != nil {
		stdin.Close()
		return nil, err
	}
	stderr, err := os.Create(a.Stderr)
	if err != nil {
		stdin.Close()
		stdout.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	return func() { stderr.Close(); stdout.Close(); stdin.Close() }, nil
}

// limit is how long the agent may run: its timeout, or less where the run's deadline
// comes first.
func (a *agentRun) limit() time.Duration {
	limit := a.Timeout
	if !a.Deadline.IsZero() {
		if d := time.Until(a.Deadline); limit <= 0 || d < limit {
			limit = max(d, time.Nanosecond) // a deadline already past stops it at once, not never
		}
	}
	return limit
}

// outcomeOf is how the agent's process ended, stopped at limit: its outcome, its exit
// status (-1 when killed or not started) and what the iteration's line says of it.
func outcomeOf(pr proc.Result, limit time.Duration) (AgentOutcome, int, string) {
	switch {
	case pr.TimedOut:
		return AgentTimeout, -1, fmt.Sprintf("stopped after %s", limit.Round(time.Millisecond))
	case pr.Cancelled:
		return AgentInterrupted, -1, "stopped: hgate was interrupted"
	case pr.Err != nil:
		return AgentCrashed, -1, pr.Err.Error()
	case pr.Signal != 0:
		return AgentCrashed, -1, "killed by signal " + pr.Signal.String()
	case pr.ExitCode != 0:
		return AgentCrashed, pr.ExitCode, fmt.Sprintf("exit status %d", pr.ExitCode)
	}
	return AgentOK, 0, ""
}

// wrap puts cmd in the agent's sandbox, if any; the shim's channel comes back when the
// sandbox brings listeners back from the agent's network namespace (nil otherwise).
func (a *agentRun) wrap(cmd *exec.Cmd) (*sandbox.Death, error) {
	switch {
	case a.Sandbox == nil:
		return nil, nil
	case len(a.Sandbox.Listen) > 0:
		return sandbox.WrapDeath(cmd, *a.Sandbox)
	default:
		return nil, sandbox.Wrap(cmd, *a.Sandbox)
	}
}

// serveNet serves the listeners the agent's sandbox brought back from its network
// namespace, and returns what closes them. The shim sends them before the agent
// starts, or ends without (it says why on the agent's stderr): the wait is bounded
// only for a shim that is stuck.
func (a *agentRun) serveNet(ch *sandbox.Death) (func(), error) {
	if a.Sandbox == nil || len(a.Sandbox.Listen) == 0 {
		return func() {}, nil
	}
	ls, err := ch.Listeners(time.Minute)
	if err != nil {
		return nil, err
	}
	return a.Net.serve(ls)
}

// gone kills what is left of the agent: in the sandbox, every process of its PID
// namespace (there should be none: the kernel emptied it when the shim ended), checked
// from /proc; without it, every process that carries its tag.
func (a *agentRun) gone(ns *sandbox.Namespace) error {
	if ns != nil {
		if err := ns.Empty(); err != nil {
			return fmt.Errorf("loop: agent: %w", err)
		}
		return nil
	}
	if a.Tag != "" {
		// Best effort: a process that cleared its environment is not found.
		_ = proc.EndByEnv(agentTagEnv + "=" + a.Tag)
	}
	return nil
}

// agentTagEnv names the variable that carries the journal's AgentTag.
const agentTagEnv = "HGATE_AGENT_TAG"

// killLeftover ends what is left of an agent that outlived a killed hgate:
// its process group, when its leader is still the process that was started,
// and every process carrying the agent's tag in its environment (the pid may
// not have reached the journal, and daemons leave the group). A journal from
// before the tag has none: only the group is ended then.
func killLeftover(pid int, start, tag string) {
	if pid > 0 && start != "" && processStart(pid) == start {
		_ = proc.KillGroup(pid)
		_ = proc.Kill(pid)
	}
	if tag != "" {
		_ = proc.KillByEnv(agentTagEnv + "=" + tag)
	}
}

// processStart is the start time of a process (clock ticks since boot, as the journal
// keeps it), to tell a leftover agent from a later process that reused its pid; "" where
// it cannot be known, so a leftover agent is then never killed by pid.
func processStart(pid int) string {
	st, err := proc.ReadStat(pid)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(st.StartTicks, 10)
}
