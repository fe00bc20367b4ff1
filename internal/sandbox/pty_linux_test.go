package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openPty opens a new pseudo-terminal in the instance /dev/ptmx finds and returns its
// master and the path of its terminal end.
func openPty() (master *os.File, tty string, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", err
	}
	master = os.NewFile(uintptr(fd), "/dev/ptmx")
	if err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err == nil {
		var n int
		if n, err = unix.IoctlGetInt(fd, unix.TIOCGPTN); err == nil {
			return master, fmt.Sprintf("/dev/pts/%d", n), nil
		}
	}
	master.Close()
	return nil, "", err
}

// ptyHelper is the sandboxed side of testPtys: it tries to open the user's terminal at
// tty, and if it can, takes what was typed there and writes on its screen; then it opens a
// pseudo-terminal of its own and talks through it. One line each: "user's: reached" or
// "user's: no", "own: ok" or "own: ERROR".
func ptyHelper(tty string) int {
	if f, err := os.OpenFile(tty, os.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK, 0); err == nil {
		buf := make([]byte, 64)
		n, _ := f.Read(buf)
		f.WriteString("SPOOFED\n")
		f.Close()
		fmt.Printf("user's: reached (took %q)\n", buf[:max(n, 0)])
	} else {
		fmt.Println("user's: no")
	}
	master, own, err := openPty()
	if err != nil {
		fmt.Println("own:", err)
		return 0
	}
	defer master.Close()
	f, err := os.OpenFile(own, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		fmt.Println("own:", err)
		return 0
	}
	defer f.Close()
	f.WriteString("ping\n")
	buf := make([]byte, 16)
	n, err := master.Read(buf)
	if err != nil || !strings.HasPrefix(string(buf[:n]), "ping") {
		fmt.Printf("own: read %q %v\n", buf[:n], err)
		return 0
	}
	fmt.Println("own: ok")
	return 0
}

// testPtys: the user's terminals are pseudo-terminals of the same user. In namespaces the
// tree has a /dev/pts of its own: it cannot open the user's (here, one this test opens
// and types a line into), so the line is still there for the user's shell and nothing the
// tree wrote reached the screen; a pseudo-terminal of its own it can still open and use.
// With Landlock alone the tree reaches the user's terminal (conceded, and shows that the
// check can fail).
func testPtys(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, isolate := range []bool{false, true} {
		master, tty, err := openPty()
		if err != nil {
			t.Skipf("no pseudo-terminal here: %v", err)
		}
		defer master.Close()
		user, err := os.OpenFile(tty, os.O_RDWR|unix.O_NOCTTY, 0) // the user's shell holds it
		if err != nil {
			t.Fatal(err)
		}
		defer user.Close()
		var raw unix.Termios // no echo: what the master reads is what was written to the tty
		if err := unix.IoctlSetTermios(int(user.Fd()), unix.TCSETS, &raw); err != nil {
			t.Fatal(err)
		}
		master.WriteString("typed-secret\n")
		cmd := exec.Command(self, "pty", tty)
		cmd.Env = append(os.Environ(), helperEnv+"=pty")
		if err := Wrap(cmd, Policy{Reap: true, Isolate: isolate}); err != nil {
			t.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("isolate=%v: %v %s", isolate, err, out)
		}
		unix.SetNonblock(int(user.Fd()), true)
		unix.SetNonblock(int(master.Fd()), true)
		typed, screen := make([]byte, 64), make([]byte, 64)
		nt, _ := user.Read(typed)
		ns, _ := master.Read(screen)
		t.Logf("isolate=%v: %s; left for the shell %q; on the screen %q", isolate, out, typed[:max(nt, 0)], screen[:max(ns, 0)])
		reached := strings.Contains(string(out), "user's: reached")
		if !isolate {
			if !reached {
				t.Errorf("Landlock alone: want the user's terminal reached (the check could not fail), got %s", out)
			}
			continue
		}
		if reached || !strings.Contains(string(out), "user's: no\n") {
			t.Errorf("in namespaces the tree reached the user's terminal: %s", out)
		}
		if !strings.HasPrefix(string(typed[:max(nt, 0)]), "typed-secret") {
			t.Errorf("what the user typed is gone: %q", typed[:max(nt, 0)])
		}
		if strings.Contains(string(screen[:max(ns, 0)]), "SPOOFED") {
			t.Errorf("the tree wrote on the user's screen: %q", screen[:max(ns, 0)])
		}
		if !strings.Contains(string(out), "own: ok\n") {
			t.Errorf("the tree cannot use a pseudo-terminal of its own: %s", out)
		}
	}
}
