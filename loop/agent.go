package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
)

// Presets expand a one-word agent into that tool's documented non-interactive
// invocation. Each reads the prompt from stdin or from {prompt_file}.
var Presets = map[string][]string{
	// Claude Code print mode reads the prompt from stdin; without skipping the
	// permission prompts it would wait for a human. --mcp-config (claude-code CLI
	// reference: "Load MCP servers from JSON files or strings") adds hgate's tools;
	// ${VAR} in a server's env is expanded by claude (its MCP docs, "Environment
	// variable expansion"), so the tools reach this loop's socket.
	// --output-format stream-json (which needs --verbose in print mode) streams one JSON
	// event a line and ends with the result object: session_id, total_cost_usd, usage,
	// is_error (read by the agentout package; the progress line shows the last event).
	"claude": {"claude", "-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions", "--mcp-config",
		`{"mcpServers":{"hgate":{"type":"stdio","command":"hgate","args":["mcp"],"env":{"HGATE_LOOP_SOCKET":"${HGATE_LOOP_SOCKET}"}}}}`},
	// codex exec reads the prompt from stdin when it is "-". Its own sandbox stays off
	// (danger-full-access): hgate's is the wall, and codex's cannot start inside it (on
	// Linux, codex-cli 0.169.0 runs every command through bubblewrap, which cannot write
	// /proc/self/uid_map under Landlock: "bwrap: setting up uid map: Permission
	// denied"; its legacy Landlock mode refuses restricted file access without
	// bubblewrap). -c sets config.toml keys: mcp_servers.<name>.command/args define a
	// stdio server, env_vars passes the socket's variable past codex's environment
	// allowlist for MCP servers (codex docs: MCP, config reference).
	// --json streams JSON Lines: thread.started's thread_id is the session,
	// turn.completed's usage the tokens, turn.failed the error.
	"codex": {"codex", "exec", "--json", "--sandbox", "danger-full-access",
		"-c", `mcp_servers.hgate.command="hgate"`, "-c", `mcp_servers.hgate.args=["mcp"]`,
		"-c", `mcp_servers.hgate.env_vars=["HGATE_LOOP_SOCKET"]`, "-"},
	// aider sends the message file and exits; hgate makes the commits, not aider.
	// --no-gitignore: aider would otherwise add .aider* to .gitignore (a change Step 0
	// rejects); --no-dirty-commits: it would commit the user's pending edits first.
	"aider": {"aider", "--yes-always", "--no-auto-commits", "--no-dirty-commits", "--no-gitignore", "--message-file", "{prompt_file}"},
}

// WithoutHgateSandbox is the preset's command line for a run where hgate's sandbox is
// off (--no-sandbox): codex gets its own sandbox back (workspace-write), since
// danger-full-access is only safe inside hgate's walls. Other command lines are
// returned as they are.
func WithoutHgateSandbox(agent, args []string) []string {
	if len(agent) != 1 || strings.TrimSpace(agent[0]) != "codex" {
		return args
	}
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--sandbox" && out[i+1] == "danger-full-access" {
			out[i+1] = "workspace-write"
		}
	}
	return out
}

// Resume is the preset's command line args continuing the session id with the next
// prompt: claude's --resume <id> (print mode keeps reading the prompt from stdin), codex's
// exec [options] resume <id> - (exec's options stay before the subcommand, which does not
// take --sandbox). ok is false for any other agent: hgate cannot resume it, and gives it
// the id in HGATE_RESUME_SESSION instead.
func Resume(agent, args []string, id string) (out []string, ok bool) {
	if len(agent) != 1 || id == "" {
		return args, false
	}
	switch strings.TrimSpace(agent[0]) {
	case "claude":
		if i := slices.Index(args, "-p"); i >= 0 {
			return slices.Insert(slices.Clone(args), i+1, "--resume", id), true
		}
	case "codex":
		if i := slices.Index(args, "-"); i > 0 && args[1] == "exec" {
			return slices.Insert(slices.Clone(args), i, "resume", id), true
		}
	}
	return args, false
}

// Command resolves the configured agent: a preset name, a one-element
// command line run by sh -c, or an argument vector. {prompt_file} is replaced
// by the prompt's path in every argument.
func Command(agent []string, promptFile string) ([]string, error) {
	if len(agent) == 0 {
		return nil, errors.New("loop: agent: no agent configured (set loop.agent in hgate.yaml or pass --agent)")
	}
	args := agent
	if len(agent) == 1 {
		if p, ok := Presets[strings.TrimSpace(agent[0])]; ok {
			args = p
		} else if strings.ContainsAny(agent[0], " \t") {
			args = []string{"sh", "-c", agent[0]}
		}
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "{prompt_file}", promptFile)
	}
	return out, nil
}

// AgentOutcome is how the agent's run ended, as summary.json and the stream name it.
type AgentOutcome string

// Agent outcomes.
const (
	AgentOK          AgentOutcome = "ok"          // exited 0
	AgentCrashed     AgentOutcome = "crashed"     // exited non-zero, was killed by a signal, or did not start
	AgentTimeout     AgentOutcome = "timeout"     // stopped at attempt_timeout or the run's deadline
	AgentInterrupted AgentOutcome = "interrupted" // stopped by SIGINT/SIGTERM, or hgate died while it ran
)

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
	stdin, err := os.Open(a.Stdin)
	if err != nil {
		return agentResult{Outcome: AgentCrashed, ExitCode: -1, Detail: err.Error()}
	}
	defer stdin.Close()
	stdout, err := os.Create(a.Stdout)
	if err != nil {
		return agentResult{Outcome: AgentCrashed, ExitCode: -1, Detail: err.Error()}
	}
	defer stdout.Close()
	stderr, err := os.Create(a.Stderr)
	if err != nil {
		return agentResult{Outcome: AgentCrashed, ExitCode: -1, Detail: err.Error()}
	}
	defer stderr.Close()

	cmd := exec.Command(a.Args[0], a.Args[1:]...)
	cmd.Dir, cmd.Env = a.Dir, a.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	if a.Sandbox != nil {
		if err := sandbox.Wrap(cmd, *a.Sandbox); err != nil {
			fmt.Fprintf(stderr, "hgate: cannot sandbox the agent: %v\n", err)
			return agentResult{Outcome: AgentCrashed, ExitCode: -1, Detail: notStarted + err.Error(), Duration: time.Since(start)}
		}
	}
	limit := a.Timeout
	if !a.Deadline.IsZero() {
		if d := time.Until(a.Deadline); limit <= 0 || d < limit {
			limit = max(d, time.Nanosecond) // a deadline already past stops it at once, not never
		}
	}
	p, err := proc.Start(cmd, proc.Options{Timeout: limit, Grace: a.Grace})
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
	if a.Started != nil {
		a.Started(p.Pid())
	}
	pr := p.Wait(ctx)
	// Every process of the agent is killed before the loop waits for the commands they
	// asked for (a daemon could hold one up by never reading its answer), and before
	// anything it must not see runs. In the sandbox the shim was the init of the agent's
	// PID namespace: the kernel killed the rest when it ended; gone checks.
	if err := a.gone(ns); err != nil {
		res.Err = err
	}
	if a.Ended != nil {
		a.Ended()
	}
	if !a.KeepOrphans {
		proc.ReapOrphans()
	}
	res.Duration = time.Since(start)
	switch {
	case pr.TimedOut:
		res.Outcome, res.Detail = AgentTimeout, fmt.Sprintf("stopped after %s", limit.Round(time.Millisecond))
	case pr.Cancelled:
		res.Outcome, res.Detail = AgentInterrupted, "stopped: hgate was interrupted"
	case pr.Err != nil:
		res.Outcome, res.Detail = AgentCrashed, pr.Err.Error()
	case pr.Signal != 0:
		res.Outcome, res.Detail = AgentCrashed, "killed by signal "+pr.Signal.String()
	case pr.ExitCode != 0:
		res.Outcome, res.ExitCode = AgentCrashed, pr.ExitCode
		res.Detail = fmt.Sprintf("exit status %d", res.ExitCode)
	default:
		res.Outcome, res.ExitCode = AgentOK, 0
	}
	return res
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
