package benchmark

import (
	"context"
	"io"
	"os/exec"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
)

// KillGrace is how long a process group has between SIGTERM and SIGKILL
// when a task times out or is cancelled. It is a variable so tests (here
// and in packages that drive a Runner) can shorten it.
var KillGrace = 2 * time.Second

// procSpec describes one command to run in its own process group.
type procSpec struct {
	argv    []string
	dir     string
	env     []string
	timeout time.Duration // 0: none
	stdout  io.Writer
	stderr  io.Writer
	sandbox *sandbox.Policy // nil: unsandboxed
	// warm starts the sandbox shim ahead of the command's turn (sandbox.WrapWarm; the
	// policy has Isolate): the command starts at process.release.
	warm bool
}

// startProc starts spec in a new process group. stdin is /dev/null: a task
// in a background group that read the terminal would be stopped by SIGTTIN.
// Its stdout and stderr are pipes proc owns (not exec's copying goroutines),
// so the wait returns as soon as the leader exits even when a grandchild
// still holds a pipe open; the group is then killed, which closes the pipes,
// and the readers drain.
func startProc(spec procSpec) (*process, error) {
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Dir = spec.dir
	cmd.Env = spec.env
	var death *sandbox.Death
	if spec.sandbox != nil {
		wrap := sandbox.WrapDeath
		if spec.warm {
			wrap = sandbox.WrapWarm
		}
		var err error
		if death, err = wrap(cmd, *spec.sandbox); err != nil {
			return nil, err
		}
	}
	stdout, stderr := spec.stdout, spec.stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	p, err := proc.Start(cmd, proc.Options{
		Stdout: stdout, Stderr: stderr, Timeout: spec.timeout, Grace: KillGrace,
		// A sandbox shim reaps the whole tree before it exits.
		Reaper: spec.sandbox != nil && spec.sandbox.Reap,
	})
	death.Started()
	if err != nil {
		death.Signal() // closes the pipe
		return nil, err
	}
	pr := &process{Process: p, death: death, ready: make(chan struct{})}
	if death != nil && len(spec.sandbox.Listen) == 0 {
		go func() {
			death.Ready()
			close(pr.ready)
		}()
	} else {
		close(pr.ready)
	}
	return pr, nil
}

// process is a started command and, in namespaces, the pipe its sandbox shim reports a
// death by signal on.
type process struct {
	*proc.Process
	death *sandbox.Death
	// ready is closed once the command's sandbox shim has set up (or is gone): at once
	// without a shim that says so. The warmer waits on it (see warmer.await).
	ready chan struct{}
}

// release starts the command of a warm shim: its timeout and duration count from here.
// A shim that is gone already (it could not set up) is not an error here: the wait
// shows how it ended, as for a shim started cold.
func (p *process) release() {
	p.Begin()
	p.death.Go()
}

// abandon ends a warm shim never released: its channel closed, it exits without
// starting the command; the wait (ctx done) kills what is left of it and reaps it.
func (p *process) abandon() {
	p.death.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Process.Wait(ctx)
}

// Wait is proc.Process.Wait, with the death the shim reported: a task killed by a signal
// in namespaces of its own ends as one killed unsandboxed, not as an exit 128+N.
func (p *process) Wait(ctx context.Context) proc.Result {
	res := p.Process.Wait(ctx)
	<-p.ready // the shim is gone: Ready has its answer, and Signal reads what follows
	if sig := p.death.Signal(); sig != 0 && res.Err == nil && res.Signal == 0 {
		res.Signal, res.ExitCode = sig, 0
	}
	return res
}

// formatDuration prints d the way a user writes it in hgate.yaml: 20m, not
// 20m0s.
func formatDuration(d time.Duration) string { return config.Duration(d) }
