package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestNoControllingTerminal: hgate runs in the user's terminal; what it starts (an agent,
// a task) has no controlling terminal, so it cannot push input into the user's (ioctl
// TIOCSTI), which the user's shell would run after hgate exits. The test gives a pty to a
// process as its controlling terminal (hgate's place), which starts a child through Start
// that tries; the verdict is the pty's input queue, read afterwards.
func TestNoControllingTerminal(t *testing.T) {
	switch os.Getenv("HGATE_TTY_TEST") {
	case "child":
		pushInput()
		return
	case "hgate":
		self, _ := os.Executable()
		cmd := exec.Command(self, "-test.run=^TestNoControllingTerminal$")
		cmd.Env = append(os.Environ(), "HGATE_TTY_TEST=child")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		p, err := Start(cmd, Options{})
		if err != nil {
			fmt.Println("start:", err)
			os.Exit(1)
		}
		p.Wait(t.Context())
		return
	}
	master, slave := openPty(t)
	defer master.Close()
	defer slave.Close()
	self, _ := os.Executable()
	cmd := exec.Command(self, "-test.run=^TestNoControllingTerminal$", "-test.v")
	cmd.Env = append(os.Environ(), "HGATE_TTY_TEST=hgate")
	cmd.Stdin = slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	fd := int(slave.Fd())
	unix.SetNonblock(fd, true)
	buf := make([]byte, 64)
	if n, _ := unix.Read(fd, buf); n > 0 {
		t.Fatalf("a process hgate started pushed %q into its terminal\n%s", buf[:n], out)
	}
	t.Logf("%s", out)
}

// pushInput tries to push a line into its controlling terminal, as an agent would.
func pushInput() {
	fd, err := unix.Open("/dev/tty", unix.O_RDWR, 0)
	if err != nil {
		fmt.Println("no terminal:", err)
		return
	}
	for _, c := range []byte("touch pwned\n") {
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&c))); e != 0 {
			fmt.Println("TIOCSTI:", e)
			return
		}
	}
	fmt.Println("pushed")
}

// openPty opens a new pseudo-terminal's two ends.
func openPty(t *testing.T) (master, slave *os.File) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skip("no pseudo-terminals here:", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}
