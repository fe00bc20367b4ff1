package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/timescale"
)

// testWarm: a warm shim (WrapWarm) sets up its sandbox and waits: its command runs only
// once told to go, under the whole policy; told nothing, its channel closed, it exits 125
// and its command never runs; and it dies with the process that started it.
func testWarm(t *testing.T) {
	t.Run("go", testWarmGo)
	t.Run("closed", testWarmClosed)
	t.Run("parent", testWarmParent)
	t.Run("ready", testWarmReady)
	t.Run("not isolated", func(t *testing.T) {
		if _, err := WrapWarm(exec.Command("true"), Policy{}); err == nil {
			t.Error("WrapWarm without Isolate: no error")
		}
	})
}

// warmMarker is the command of the warm tests: it writes dir/ran, and tries to write
// outside its policy (dir/../outside).
func warmMarker(dir string) *exec.Cmd {
	return exec.Command("sh", "-c", `echo ran > ran; (echo out > ../outside) 2>/dev/null && echo wrote outside; exit 0`)
}

func startWarm(t *testing.T, dir string) (*exec.Cmd, *Death, *bytes.Buffer) {
	t.Helper()
	cmd := warmMarker(dir)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	d, err := WrapWarm(cmd, Policy{Write: []string{dir}, Isolate: true, NoNetwork: true})
	if err != nil {
		t.Fatal(err)
	}
	err = cmd.Start()
	d.Started()
	if err != nil {
		t.Fatal(err)
	}
	return cmd, d, &out
}

func testWarmGo(t *testing.T) {
	dir := filepath.Join(writableTemp(t), "room")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd, d, out := startWarm(t, dir)
	if waitWarm(t, cmd.Process.Pid) {
		if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
			t.Fatal("a warm shim ran its command before it was told to go")
		}
	}
	if err := d.Go(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("released: %v\n%s", err, out)
	}
	d.Signal()
	if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
		t.Errorf("released, the command did not run: %v\n%s", err, out)
	}
	if strings.Contains(out.String(), "wrote outside") {
		t.Errorf("released from a warm shim, the command wrote outside its policy: %s", out)
	}
	if err := d.Go(); err == nil {
		t.Error("Go twice: no error")
	}
}

func testWarmClosed(t *testing.T) {
	dir := filepath.Join(writableTemp(t), "room")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cmd, d, out := startWarm(t, dir)
	waitWarm(t, cmd.Process.Pid)
	d.Close()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitPolicy {
		t.Errorf("a warm shim whose channel closed: %v, want exit %d", err, exitPolicy)
	}
	if out.Len() != 0 {
		t.Errorf("a warm shim never released printed %q", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("a warm shim never released ran its command")
	}
}

// testWarmReady: the shim says it is ready (Death.Ready) only once its set-up is done: not
// while it is paused after its mounts, before its Landlock domain and its capability drop;
// and before its command starts (a warm shim's never runs unless told to go). A shim
// killed before it is ready ends its channel instead: Ready is false.
func testWarmReady(t *testing.T) {
	for _, kill := range []bool{false, true} {
		dir := filepath.Join(writableTemp(t), "room")
		if err := os.Mkdir(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		pipes := t.TempDir()
		for _, n := range []string{"reached", "resume"} {
			if err := unix.Mkfifo(filepath.Join(pipes, n), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		cmd := warmMarker(dir)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), fault.Env+"=sandbox-mounted", fault.PauseEnv+"="+pipes)
		d, err := WrapWarm(cmd, Policy{Write: []string{dir}, Isolate: true})
		if err != nil {
			t.Fatal(err)
		}
		err = cmd.Start()
		d.Started()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.ReadFile(filepath.Join(pipes, "reached")); err != nil { // blocks until it pauses
			cmd.Process.Kill()
			t.Fatal(err)
		}
		// What the shim wrote before its pause is in the socket by now.
		if queued(t, d) {
			t.Error("the shim sent a record while paused before its Landlock domain")
		}
		ready := make(chan bool, 1)
		go func() { ready <- d.Ready() }()
		if kill {
			cmd.Process.Kill()
		} else if err := os.WriteFile(filepath.Join(pipes, "resume"), []byte("go\n"), 0); err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		var got bool
		select {
		case got = <-ready:
		case <-time.After(timescale.D(20 * time.Second)):
			cmd.Process.Kill()
			t.Fatal("Ready never returned")
		}
		if got == kill {
			t.Errorf("killed %v: Ready %v", kill, got)
		}
		d.Close()
		cmd.Wait()
		if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
			t.Errorf("killed %v: the command of a warm shim never told to go ran", kill)
		}
	}
}

// queued reports whether a record of the shim's waits unread on d's channel (peeked, not
// taken).
func queued(t *testing.T, d *Death) bool {
	t.Helper()
	raw, err := d.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var rerr error
	err = raw.Control(func(fd uintptr) {
		buf := make([]byte, 64)
		n, _, rerr = unix.Recvfrom(int(fd), buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	})
	if err != nil {
		t.Fatal(err)
	}
	if errors.Is(rerr, unix.EAGAIN) {
		return false
	}
	if rerr != nil {
		t.Fatal(rerr)
	}
	return n > 0
}

// testWarmParent: a warm shim whose starter dies (the helper "warm", which exits as soon
// as its shim waits) is killed by the kernel: no warm shim outlives hgate.
func testWarmParent(t *testing.T) {
	dir := filepath.Join(writableTemp(t), "room")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, dir)
	cmd.Env = append(os.Environ(), helperEnv+"=warm")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v %s", err, b)
	}
	var pid int
	var ticks uint64
	if _, err := fmt.Sscanf(string(b), "pid %d start %d", &pid, &ticks); err != nil {
		t.Fatalf("helper said %q: %v", b, err)
	}
	for deadline := time.Now().Add(timescale.D(10 * time.Second)); ; time.Sleep(5 * time.Millisecond) {
		st, err := proc.ReadStat(pid)
		if err != nil || st.StartTicks != ticks || st.State == 'Z' {
			break // gone (or a zombie of its new parent's, or another process)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the warm shim %d outlived the process that started it", pid)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("a warm shim whose starter died ran its command")
	}
}

// warmHelper is the helper "warm DIR": it starts a warm shim of warmMarker in DIR, prints
// its pid and start time once it waits, and exits without releasing it.
func warmHelper(dir string) int {
	cmd := warmMarker(dir)
	cmd.Dir = dir
	d, err := WrapWarm(cmd, Policy{Write: []string{dir}, Isolate: true})
	if err == nil {
		err = cmd.Start()
		d.Started()
	}
	if err != nil {
		fmt.Println(err)
		return 1
	}
	for deadline := time.Now().Add(timescale.D(10 * time.Second)); !warmWaiting(cmd.Process.Pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			fmt.Println("the warm shim never reached its wait")
			return 1
		}
	}
	st, err := proc.ReadStat(cmd.Process.Pid)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Printf("pid %d start %d\n", cmd.Process.Pid, st.StartTicks)
	// The channel stays open until this process dies: a collected Death closes it, and a
	// warm shim whose channel ends exits on its own, parent or not.
	runtime.KeepAlive(d)
	return 0
}

// waitWarm waits until the warm shim pid has set up its sandbox (warmWaiting); false
// when it could not be seen (the shim ended), bounded.
func waitWarm(t *testing.T, pid int) bool {
	t.Helper()
	for deadline := time.Now().Add(timescale.D(10 * time.Second)); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if warmWaiting(pid) {
			return true
		}
	}
	var seen []string
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*")
	for _, task := range tasks {
		data, _ := os.ReadFile(filepath.Join(task, "status"))
		sys, _ := os.ReadFile(filepath.Join(task, "syscall"))
		for _, line := range strings.Split(string(data), "\n") {
			if k, _, _ := strings.Cut(line, ":"); k == "NoNewPrivs" || k == "CapEff" || k == "State" {
				seen = append(seen, line)
			}
		}
		seen = append(seen, "syscall "+string(sys))
	}
	t.Fatalf("the warm shim %d never reached its wait: %q", pid, seen)
	return false
}

// warmWaiting says whether the shim pid is at its wait: one of its threads (the one
// that starts the command) under Landlock (no_new_privs), its capabilities dropped, asleep,
// and, where /proc shows it (as root: the shim is not dumpable), in read(2).
func warmWaiting(pid int) bool {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*")
	for _, task := range tasks {
		data, err := os.ReadFile(filepath.Join(task, "status"))
		if err != nil {
			continue
		}
		fields := map[string]string{}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, _ := strings.Cut(line, ":")
			fields[k] = strings.TrimSpace(v)
		}
		capEff, err := strconv.ParseUint(fields["CapEff"], 16, 64)
		if err != nil || capEff&^keptCapabilities != 0 || fields["NoNewPrivs"] != "1" || !strings.HasPrefix(fields["State"], "S") {
			continue
		}
		sys, err := os.ReadFile(filepath.Join(task, "syscall"))
		if err != nil || strings.HasPrefix(string(sys), strconv.Itoa(unix.SYS_READ)+" ") {
			return true // in read(2), or not readable: the rest has to do
		}
	}
	return false
}
