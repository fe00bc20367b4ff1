package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Death is the shim's channel back to its caller, for a command wrapped with Isolate: a
// socket pair whose one end only the shim holds (close-on-exec, and the shim is not
// dumpable), so that what comes out of it is the shim's word, never the command's. It
// carries three records.
//
// The death: the shim is the init of the command's PID namespace, and an init cannot die
// of a signal it sends itself: it exits 128+N as a shell would, which a command can also
// do on purpose (exit 137). So the shim also sends "signal N".
//
// The listeners of Policy.Listen: bound in the command's network namespace before the
// command starts and sent as descriptors (SCM_RIGHTS) with "listen N".
//
// The set-up: "ready", after the listeners and before the command starts (Ready), which a
// caller that starts several shims uses to keep the next ones from competing for the CPU
// with those whose commands are due.
type Death struct {
	conn   *net.UnixConn
	w      *os.File
	listen int // how many listeners the shim sends
	got    bool
	warm   bool // the shim waits for Go (WrapWarm)
}

// goRecord is what Go sends a warm shim: start the command.
const goRecord = "go\n"

// readyRecord is what the shim sends once its set-up is done (namespaces, mounts, Landlock,
// capabilities), just before it starts the command or, warm, waits for Go.
const readyRecord = "ready\n"

// Ready waits until the shim has set up its sandbox, the command not started yet (a warm
// shim waits for Go then): true when it said so, false when the channel ended first (the
// shim failed to set up, its stderr says why, was killed, or d was closed). It is for
// scheduling only, never for a verdict: the wait still shows how the command ended. Call
// it at most once, after Started (and after Listeners when p has Listen, whose record comes
// first); Signal must not be called until it has returned.
func (d *Death) Ready() bool {
	if d == nil {
		return false
	}
	for {
		text, fds, err := d.record()
		closeAll(fds)
		if err != nil {
			return false
		}
		if text == readyRecord {
			return true
		}
	}
}

// Go tells a warm shim (WrapWarm) to start its command. Call it once, after Started. An
// error means the shim is gone (it failed to set up, its stderr says why, or was killed):
// the caller's wait then shows how it ended.
func (d *Death) Go() error {
	if d == nil || !d.warm {
		return errors.New("sandbox: not a warm shim")
	}
	d.warm = false
	if _, err := d.conn.Write([]byte(goRecord)); err != nil {
		return fmt.Errorf("sandbox: release the warm shim: %w", err)
	}
	return nil
}

// Close closes this side of the channel without reading it: a warm shim not yet told to
// go exits without starting its command. Signal after Close reports nothing.
func (d *Death) Close() {
	if d != nil {
		d.Started()
		d.conn.Close()
	}
}

// WrapDeath is Wrap with the shim's channel when p has Isolate (nil otherwise: without
// namespaces the shim dies of its leader's signal itself, which the wait shows). Call
// Started once the command started (or failed to start), Listeners then when p has
// Listen, and Signal after its wait.
func WrapDeath(cmd *exec.Cmd, p Policy) (*Death, error) {
	if !p.Isolate {
		return nil, Wrap(cmd, p)
	}
	return wrapDeath(cmd, p)
}

// WrapWarm is WrapDeath for a shim started ahead of its command's turn (a warm shim), p
// with Isolate: the shim starts, dies with this process as always, sets up its
// namespaces, mounts, Landlock and capabilities, all of p's and no wider, then waits on
// its channel. Go tells it to start the command; when the channel closes instead (Signal,
// Close, or this process's death) it exits 125 without starting anything. The command's
// clock is the caller's to start at Go. Without Isolate there is no warm shim: the error
// says so, and the caller starts its command as it did.
func WrapWarm(cmd *exec.Cmd, p Policy) (*Death, error) {
	if !p.Isolate {
		return nil, errors.New("sandbox: a warm shim needs Isolate")
	}
	p.warm = true
	d, err := wrapDeath(cmd, p)
	if d != nil {
		d.warm = true
	}
	return d, err
}

// wrapDeath wraps cmd with the shim's channel; p has Isolate.
func wrapDeath(cmd *exec.Cmd, p Policy) (*Death, error) {
	r, w, err := socketPair()
	if err != nil {
		return nil, fmt.Errorf("sandbox: the shim's channel: %w", err)
	}
	c, err := net.FileConn(r)
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("sandbox: the shim's channel: %w", err)
	}
	fd := 3 + len(cmd.ExtraFiles)
	extra := cmd.ExtraFiles
	cmd.ExtraFiles = append(cmd.ExtraFiles, w)
	if err := wrap(cmd, p, fd); err != nil {
		cmd.ExtraFiles = extra
		c.Close()
		w.Close()
		return nil, err
	}
	return &Death{conn: c.(*net.UnixConn), w: w, listen: len(p.Listen)}, nil
}

// Started closes this process's copy of the shim's end of the channel: once the shim is
// gone, a read finds its records or the end.
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
	defer d.conn.Close()
	// The shim has exited: its records, if any, are in the socket, and no other writer is
	// left. The deadline only bounds a mistake of the caller's (a call before the wait).
	d.conn.SetReadDeadline(time.Now().Add(time.Second))
	for {
		text, fds, err := d.record()
		closeAll(fds) // listeners never asked for
		if err != nil {
			return 0
		}
		if sig := parseDeath(text); sig != 0 {
			return sig
		}
	}
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
