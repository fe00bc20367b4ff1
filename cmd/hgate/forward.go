package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/loop"
)

// outsideOnly says, for each command the sandboxed agent may not run, why the loop
// keeps it to itself.
var outsideOnly = map[string]string{
	"prepare": "the workspace is prepared once, by a human, before the loop",
	"record":  "the loop records every kept iteration itself",
	"state":   "the loop keeps hgate's state files itself",
	"hooks":   "git hooks are installed by a human, not the agent",
	"loop":    "a loop does not start inside another",
	"report":  "the history is for a human; hgate status says what the agent may know",
	"final":   "the sealed final split is scored for a human, never for the agent",
}

// forward runs a command inside the loop's sandbox, where HGATE_LOOP_SOCKET names
// the loop's socket: bench, gate, guard and status are sent to the loop, which runs
// them outside the sandbox; the commands that write hgate's state are refused.
// ok is false for a command that runs here as usual (hgate mcp).
func forward(ctx context.Context, socket, command string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	name, _, _ := strings.Cut(command, " ")
	if why, refused := outsideOnly[name]; refused {
		if name == "loop" { // in the shape of every refusal of hgate loop to start
			fmt.Fprintf(stderr, "hgate: %v\n", &loop.NotStarted{Reason: why, Where: agentapi.EnvSocket, Fix: "run hgate loop outside the loop's sandbox"})
			return exitCannot, true
		}
		fmt.Fprintf(stderr, "hgate: %s runs only outside the loop's sandbox: %s\n", name, why)
		return exitCannot, true
	}
	if !agentapi.Served(name) {
		return 0, false
	}
	code, err := agentapi.Call(ctx, socket, args, stdout, stderr)
	if err == nil {
		return code, true
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "hgate: interrupted")
		return exitInterrupted, true
	}
	fmt.Fprintf(stderr, "hgate: %v\n", err)
	return exitCannot, true
}
