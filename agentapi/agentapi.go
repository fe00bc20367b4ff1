// Package agentapi serves the hgate commands the sandboxed agent runs: the loop
// listens on a Unix socket outside the repository and runs bench, gate, guard and
// status in its own process, where it can write .git and take hgate's lock, on
// behalf of an agent that cannot.
//
// Protocol, one request per connection:
//
//	client → server: one JSON object and a newline, {"args": ["gate", "--json"]}:
//	                 the command line after "hgate", at most 64 KiB.
//	server → client: frames of [kind byte][uint32 big-endian length][payload]:
//	                 'o' a chunk of stdout, 'e' a chunk of stderr, as the command
//	                 writes them, then one 'x' frame whose payload is the exit code
//	                 in decimal; the server then closes the connection.
//	                 stdout and stderr together carry at most 1 MiB (then a last
//	                 stderr line says what was cut), and every write has a deadline.
//
// The client keeps its side open while it waits: the server takes a closed
// connection for an agent that went away and cancels the command. Only the
// commands and flags that cannot weaken the gate are served (see Check); the
// server forces the repository itself.
package agentapi

import (
	"fmt"
	"io"
	"strings"
)

// EnvSocket names the environment variable that carries the socket's path to the agent.
const EnvSocket = "HGATE_LOOP_SOCKET"

// Frame kinds.
const (
	kindStdout = 'o'
	kindStderr = 'e'
	kindExit   = 'x'
)

// maxRequest bounds a request line; an argument list is far shorter.
const maxRequest = 64 << 10

// maxFrame bounds a frame the client accepts.
const maxFrame = 16 << 20

// request is the client's one line.
type request struct {
	Args []string `json:"args"`
}

// Exit codes the server answers with itself (the command's own otherwise).
const (
	exitCannot      = 2
	exitInterrupted = 130
)

// served lists the commands served and, for each, the flags it accepts beyond
// --json and -v. Everything else — -C, --config, --no-clean-room, --rerun,
// --no-wait, --help — is refused: each could point the gate elsewhere, weaken it,
// or has no use through the socket. A slice, not a map: the linker lays it out, where a
// map is built at every start of every command.
var served = []struct {
	command string
	flags   []string
}{
	{"bench", []string{"--tasks"}},
	{"gate", []string{"--fail-fast"}},
	{"guard", nil},
	{"status", nil},
}

// servedFlags is the flags served accepts for command; ok is false when the socket does not
// serve it.
func servedFlags(command string) (flags []string, ok bool) {
	for _, s := range served {
		if s.command == command {
			return s.flags, true
		}
	}
	return nil, false
}

// Served reports whether command is one the socket serves.
func Served(command string) bool { _, ok := servedFlags(command); return ok }

// Check validates a command line for the socket and returns the command and the
// normalized arguments to run ([command, flags...], --tasks values in the
// --tasks=ID form so that no value is read as a flag). Its error is one line
// naming the first argument refused.
func Check(args []string) (command string, norm []string, err error) {
	var flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--json" || a == "-v" || a == "--verbose":
			if a == "--verbose" {
				a = "-v"
			}
			flags = append(flags, a)
		case a == "--fail-fast":
			flags = append(flags, a)
		case a == "--tasks" || strings.HasPrefix(a, "--tasks="):
			v, ok := strings.CutPrefix(a, "--tasks=")
			if !ok {
				if i+1 >= len(args) {
					return "", nil, fmt.Errorf("--tasks: expected a task id")
				}
				i++
				v = args[i]
			}
			flags = append(flags, "--tasks="+v)
		case strings.HasPrefix(a, "-"):
			name, _, _ := strings.Cut(a, "=")
			return "", nil, fmt.Errorf("%s is not allowed through the loop's socket (allowed: --json, -v, --fail-fast for gate, --tasks for bench)", name)
		case command != "":
			return "", nil, fmt.Errorf("unexpected argument %q", a)
		default:
			if !Served(a) {
				return "", nil, fmt.Errorf("%s is not served through the loop's socket (served: bench, gate, guard, status)", a)
			}
			command = a
		}
	}
	if command == "" {
		return "", nil, fmt.Errorf("no command given (served: bench, gate, guard, status)")
	}
	for _, f := range flags {
		name, _, _ := strings.Cut(f, "=")
		if name == "--json" || name == "-v" {
			continue
		}
		allowed, _ := servedFlags(command)
		ok := false
		for _, g := range allowed {
			ok = ok || g == name
		}
		if !ok {
			return "", nil, fmt.Errorf("%s is not allowed through the loop's socket for %s (allowed: --json, -v, --fail-fast for gate, --tasks for bench)", name, command)
		}
	}
	return command, append([]string{command}, flags...), nil
}

// Status is what the agent may know about the run: hgate status prints it.
type Status struct {
	Iteration int      `json:"iteration,omitempty"` // the iteration in progress; 0 outside a loop
	RunID     string   `json:"run_id,omitempty"`
	Best      *float64 `json:"best_val_score"` // the gate's best (refs/hgate/best's estimate); null before prepare
	// BestInterval is the best's interval from its trials (gate.trials); absent without them.
	BestInterval []float64 `json:"best_interval,omitempty"`
	SuiteSize    int       `json:"suite_size"`       // the regression suite's tasks
	Allow        []string  `json:"allow"`            // the paths the agent may change
	Trials       *Trials   `json:"trials,omitempty"` // the trials Step 2 runs per test task
}

// Trials is how many trials Step 2 runs per test task, and why: gate.trials in
// hgate.yaml, or auto's decision at prepare (Tasks and Differing; absent before prepare
// and for a workspace prepared before auto existed, which keeps one trial). The fields
// are gate.TrialsSetting's, which the layers keep from importing this package.
type Trials struct {
	Auto      bool    `json:"auto"`
	Min       int     `json:"min"`
	Max       int     `json:"max"`
	Margin    float64 `json:"margin"`
	Tasks     *int    `json:"tasks,omitempty"`     // tasks prepare ran twice
	Differing *int    `json:"differing,omitempty"` // of them, those whose reward differed between the runs
}

// Text says it in one line, as hgate status and prepare print it.
func (t Trials) Text() string {
	n := fmt.Sprintf("%d..%d", t.Min, t.Max)
	if t.Min == t.Max {
		n = fmt.Sprint(t.Min)
	}
	n += " per test task"
	if t.Margin > 0 {
		n += fmt.Sprintf(", margin %.4f", t.Margin)
	}
	switch {
	case !t.Auto:
		return n + " (gate.trials in hgate.yaml)"
	case t.Tasks == nil:
		return n + " (auto, not decided: the baseline was taken without it, by an older hgate or under a gate.trials written out; hgate prepare --reset decides)"
	case *t.Differing == 0:
		return fmt.Sprintf("%s (auto: each of %d tasks scored the same in prepare's runs)", n, *t.Tasks)
	}
	return fmt.Sprintf("%s (auto: %d of %d tasks scored differently in prepare's runs)", n, *t.Differing, *t.Tasks)
}

// WriteText prints s as hgate status does without --json.
func (s Status) WriteText(w io.Writer) {
	if s.Iteration > 0 || s.RunID != "" {
		fmt.Fprintf(w, "iteration %d of run %s\n", s.Iteration, s.RunID)
	}
	best := "none"
	if s.Best != nil {
		best = fmt.Sprintf("%.4f", *s.Best)
	}
	if len(s.BestInterval) == 2 {
		best += fmt.Sprintf(" (in [%.4f, %.4f] from its trials)", s.BestInterval[0], s.BestInterval[1])
	}
	fmt.Fprintf(w, "best val_score: %s\n", best)
	fmt.Fprintf(w, "regression suite: %d task(s)\n", s.SuiteSize)
	fmt.Fprintf(w, "allow: %s\n", strings.Join(s.Allow, " "))
	if s.Trials != nil {
		fmt.Fprintf(w, "trials: %s\n", s.Trials.Text())
	}
}
