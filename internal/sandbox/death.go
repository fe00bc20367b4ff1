package sandbox

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Death is how a command wrapped with Isolate tells its death by a signal. The shim is the
// init of the command's PID namespace, and an init cannot die of a signal it sends itself:
// it exits 128+N as a shell would, which a command can also do on purpose (exit 137). So
// the shim also writes "signal N" to a pipe hgate opened before the start and the command
// never holds (the shim's end is close-on-exec, and the shim is not dumpable): what comes
// out of it is the shim's word, not the command's.
type Death struct {
	r, w *os.File
}

// WrapDeath is Wrap with a death pipe when p has Isolate (nil otherwise: without
// namespaces the shim dies of its leader's signal itself, which the wait shows). Call
// Started once the command started (or failed to start) and Signal after its wait.
func WrapDeath(cmd *exec.Cmd, p Policy) (*Death, error) {
	if !p.Isolate {
		return nil, Wrap(cmd, p)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: death pipe: %w", err)
	}
	fd := 3 + len(cmd.ExtraFiles)
	extra := cmd.ExtraFiles
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	if err := wrap(cmd, p, fd); err != nil {
		cmd.ExtraFiles = extra
		r.Close()
		w.Close()
		return nil, err
	}
	return &Death{r: r, w: w}, nil
}

// Started closes this process's end of the pipe the shim writes: once the shim is gone,
// a read finds its record or the end.
func (d *Death) Started() {
	if d != nil && d.w != nil {
		d.w.Close()
		d.w = nil
	}
}

// Signal is the signal the command's leader died of, or 0 when it exited (or the shim
// reported nothing: killed itself, say). Call it after the command's wait; it closes d.
func (d *Death) Signal() syscall.Signal {
	if d == nil {
		return 0
	}
	d.Started()
	defer d.r.Close()
	// The shim has exited: its record, if any, is in the pipe, and no other writer is left.
	// The deadline only bounds a mistake of the caller's (a call before the wait).
	d.r.SetReadDeadline(time.Now().Add(time.Second))
	b, _ := io.ReadAll(io.LimitReader(d.r, 64))
	return parseDeath(string(b))
}

// deathRecord is what the shim writes when its leader died of sig.
func deathRecord(sig syscall.Signal) string { return "signal " + strconv.Itoa(int(sig)) + "\n" }

// parseDeath reads a deathRecord; anything else is no death.
func parseDeath(s string) syscall.Signal {
	num, ok := strings.CutPrefix(s, "signal ")
	if !ok || !strings.HasSuffix(num, "\n") {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSuffix(num, "\n"))
	if err != nil || n <= 0 || n > 64 {
		return 0
	}
	return syscall.Signal(n)
}
