package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/hgate/hgate/agentapi"
)

// Child is how hgate-mcp runs a tool: the hgate binary at path as a child process,
// "hgate [-C dir] [--config file] ARGS...", in this process's environment. Inside the
// loop's sandbox (HGATE_LOOP_SOCKET set) the child sends the command to the loop's
// socket, as hgate does for the agent's own commands, and dir and config are not
// passed: the loop runs the command in its own repository, and its socket refuses -C
// and --config. The child's stdin is empty: this process's stdin is the MCP stream.
func Child(path, dir, config string) Exec {
	var pre []string
	if os.Getenv(agentapi.EnvSocket) != "" {
		dir, config = "", ""
	}
	if dir != "" {
		pre = append(pre, "-C", dir)
	}
	if config != "" {
		pre = append(pre, "--config", config)
	}
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		cmd := exec.CommandContext(ctx, path, append(slices.Clone(pre), args...)...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		// A cancelled tool call interrupts hgate as Ctrl-C would, so it stops its
		// tasks and leaves its state files as they were; Kill where there is no SIGTERM.
		cmd.Cancel = func() error {
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				return cmd.Process.Kill()
			}
			return nil
		}
		cmd.WaitDelay = time.Minute
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case err == nil:
			return exitOK
		case errors.As(err, &exit) && exit.ExitCode() >= 0:
			return exit.ExitCode()
		case ctx.Err() != nil:
			fmt.Fprintln(stderr, "hgate: interrupted")
			return exitInterrupted
		}
		fmt.Fprintf(stderr, "hgate-mcp: run %s: %v\n", path, err)
		return exitCannot
	}
}
