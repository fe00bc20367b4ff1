package loop

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/agentout"
)

// session is one run of the agent's CLI: the attempt, a gate repair, a harness phase or
// one agent of a generation. It holds what every one of them needs, built the same way
// for all: the sandbox (jail and private TMPDIR), the prompt file, the command line (its
// CLI's, given the active tools, resuming a session where asked), the environment with
// the socket's address, the process, and what the agent printed about its run (spend
// included, which the caller adds to its books).
type session struct {
	jail    *jail
	prompt  string    // the prompt file
	run     *agentRun // the process, ready to start
	resumed bool      // the command line continues a session
	scope   string    // its scope at the model gateway ("" = not routed)
	prefix  string    // that scope's path prefix, ended with the session
}

// sessionSpec is what differs between the places a session is opened.
type sessionSpec struct {
	Phase     string // attempt, reflect, build, artifact_repair
	Dir       string // its folder: prompt.txt, agent.stdout, agent.stderr
	Worktree  string // where the agent runs
	Iteration int
	Repair    int
	Session   string // the session to resume; "" starts a fresh one
	Timeout   time.Duration
	Jail      jailSpec
	Server    *agentapi.Server // its socket
	Message   string           // HGATE_MESSAGE_FILE
	Tag       string           // HGATE_AGENT_TAG: runSession draws it
	// Prompt renders the prompt, given the agent's private TMPDIR (where a phase's
	// answer file goes, the one place the sandboxed agent may write it).
	Prompt func(tmp string) string
	// Tools are the iteration's active tools (nil: none are given).
	Tools *activation
	// Env is what this kind of session adds to every session's environment.
	Env []string
	// KeepOrphans leaves the loop's orphans to the caller (agentRun.KeepOrphans).
	KeepOrphans bool
	// Agent is its index among a generation's agents (0: the single agent): which
	// private home its CLI gets (clihome.go).
	Agent int
}

// openSession opens spec's sandbox, writes its prompt and builds its process: nothing is
// started yet. The caller closes it.
func (r *runner) openSession(spec sessionSpec) (*session, error) {
	jl, err := r.jails().open(spec.Jail)
	if err != nil {
		return nil, err
	}
	s := &session{jail: jl, prompt: filepath.Join(spec.Dir, "prompt.txt")}
	if err := writeAtomic(s.prompt, []byte(spec.Prompt(jl.tmp))); err != nil {
		s.close()
		return nil, err
	}
	args, err := Command(r.cfg.Agent, s.prompt)
	if err != nil {
		s.close()
		return nil, err
	}
	cli := r.cli()
	if r.j.Sandbox == SandboxOff {
		args = cli.Unsandboxed(args) // as its CLI runs without hgate's sandbox
	}
	var homeEnv, toolEnv []string
	if jl.policy != nil {
		// Its CLI's own home, private to the run and the agent: written there, never in
		// the user's.
		home, err := r.cliHome(spec.Agent)
		if err != nil {
			s.close()
			return nil, err
		}
		if home != "" {
			jl.policy.Write = append(jl.policy.Write, home)
			homeEnv = []string{cli.Home().Var + "=" + home}
		}
		// hgate's socket is the one pathname socket outside its write set it reaches.
		jl.policy.Sockets = append(jl.policy.Sockets, spec.Server.Path())
	}
	if spec.Tools != nil {
		args, toolEnv = spec.Tools.apply(cli, args)
		if spec.Tools.Home != "" && jl.policy != nil {
			// The CLI writes its state there (what the user's home links to, it writes there).
			jl.policy.Write = append(jl.policy.Write, spec.Tools.Home)
		}
	}
	args, s.resumed = agentcli.Resume(cli, args, spec.Session)
	args, routeEnv, scope, prefix := r.mg.route(spec, args)
	s.scope, s.prefix = scope, prefix
	env := append(os.Environ(),
		"HGATE_PROMPT_FILE="+s.prompt, "HGATE_MESSAGE_FILE="+spec.Message,
		"HGATE_ITERATION="+strconv.Itoa(spec.Iteration), "HGATE_RUN_ID="+r.j.RunID, "HGATE_REPAIR="+strconv.Itoa(spec.Repair),
		agentTagEnv+"="+spec.Tag, "HGATE_RESUME_SESSION="+spec.Session, "HGATE_PHASE="+spec.Phase,
		"TMPDIR="+jl.tmp, spec.Server.Env())
	// The activation's home (toolEnv) after the private one: it links the private one's entries.
	env = append(append(append(append(env, spec.Env...), homeEnv...), toolEnv...), cli.Env(jl.policy != nil, jl.tmp)...)
	if jl.net != nil {
		env = append(env, jl.net.env...) // after the CLI's: the proxy is hgate's to set
	}
	env = append(env, routeEnv...) // last: over the caller's ANTHROPIC_API_KEY and the like
	s.run = &agentRun{
		Args: args, Dir: spec.Worktree, Sandbox: jl.policy, Net: jl.net, Env: env, Tag: spec.Tag, Ended: spec.Server.Drain,
		Stdin: s.prompt, Stdout: filepath.Join(spec.Dir, "agent.stdout"), Stderr: filepath.Join(spec.Dir, "agent.stderr"),
		Timeout: spec.Timeout, Deadline: r.dead, Grace: r.opts.Grace, KeepOrphans: spec.KeepOrphans,
	}
	return s, nil
}

// runSession is one agent's run, the same for the single agent (the attempt, a repair, a
// harness phase), each agent of a generation and the preflight's turn: it opens spec's
// session with a fresh tag, journals the agent in its slot (nil: not journaled) before it
// starts and its process once it runs, calls ready (nil: nothing), runs it to its end and
// reads what it printed. ready's done (nil: nothing) runs as soon as the agent has ended. The caller
// closes the session it returns (on an error there is none); an error once the agent was
// started means a process of it may live: nothing else may run (fail closed).
func (r *runner) runSession(ctx context.Context, spec sessionSpec, slot *agentSlot, ready func(*session) (done func(), err error)) (*session, agentResult, agentout.Run, error) {
	// The tag reaches the journal before the agent starts, so a resumed run can end
	// whatever a killed hgate left of it.
	spec.Tag = rand.Text()
	ss, err := r.openSession(spec)
	if err != nil {
		return nil, agentResult{}, agentout.Run{}, err
	}
	// Its scope serves this run of the agent only: not the code it leaves for a gate.
	defer r.mg.end(ss.prefix)
	var done func()
	if slot != nil {
		ss.run.Started = slot.started()
		err = slot.begin(spec.Tag, ss.scope)
	}
	if err == nil && ready != nil {
		done, err = ready(ss)
	}
	if err != nil {
		ss.close()
		return nil, agentResult{}, agentout.Run{}, err
	}
	res, out, err := ss.wait(ctx, r.cli())
	if done != nil {
		done()
	}
	if err == nil && ss.run.Sandbox != nil {
		// The agent's processes are gone: a login its CLI refreshed goes back to the user.
		if _, herr := r.cliHome(spec.Agent); herr != nil {
			fmt.Fprintf(r.log, "[loop] %v\n", herr)
		}
	}
	if err == nil {
		// Whatever the phase changed that hgate's own git reads, or git itself (through a
		// name the PATH check cannot see), stops the run now, before any git starts.
		err = r.checkGit()
	}
	if err != nil {
		ss.close()
		return nil, agentResult{}, agentout.Run{}, err
	}
	return ss, res, out, nil
}

// wait runs the session's process to its end and reads what the agent printed, as its
// CLI's adapter reads it. An error means a process of it may still live: nothing else
// may run (fail closed).
func (s *session) wait(ctx context.Context, cli agentcli.CLI) (agentResult, agentout.Run, error) {
	res := s.run.run(ctx)
	if res.Err != nil {
		return agentResult{}, agentout.Run{}, res.Err
	}
	changed, err := s.jail.restoreAttrs()
	if err != nil {
		return agentResult{}, agentout.Run{}, err
	}
	out := readAgentOutput(cli, s.run.Stdout, s.run.Stderr)
	if len(changed) > 0 {
		// Put back already: said as a refused write, so the iteration's line shows it.
		if out.Refused.Count++; out.Refused.Source == "" {
			out.Refused.Source, out.Refused.Example = "hgate's check after the phase", "attributes of "+changed[0]+" changed; put back"
		}
	}
	return judge(res, out, s.run.Stderr), out, nil
}

// ranAgent records on it how one agent run ended (its time added to the iteration's, for
// an attempt and its repairs) and what the agent was refused, if anything.
func ranAgent(it *Iteration, res agentResult, out agentout.Run) {
	if refused := out.Refused.String(); refused != "" {
		it.Refused = refused
	}
	it.Agent, it.AgentDetail = res.Outcome, res.Detail
	it.AgentSeconds += secs(res.Duration)
}

// close removes the session's private TMPDIR.
func (s *session) close() { s.jail.close() }
