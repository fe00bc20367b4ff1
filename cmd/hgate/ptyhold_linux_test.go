package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hgate/hgate/internal/timescale"
)

// ptyhold is the user's terminal in an attack script, a program on the scripts' PATH:
//
//	ptyhold hold DIR
//
// opens a pseudo-terminal and holds its terminal end, as the user's shell does; types a
// line into it (what the user typed and the shell has not read yet: "hunter2-typed");
// writes the terminal's path to DIR/tty; and appends to DIR/screen whatever anything
// writes to the terminal (its screen; no echo of the typed line). Then
//
//	ptyhold stop DIR
//
// ends it: it writes what is still waiting to be read there, for the shell, to DIR/left.
func ptyhold() {
	if len(os.Args) != 3 || (os.Args[1] != "hold" && os.Args[1] != "stop") {
		fmt.Fprintln(os.Stderr, "usage: ptyhold hold DIR | ptyhold stop DIR")
		os.Exit(2)
	}
	dir := os.Args[2]
	if os.Args[1] == "stop" {
		os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
		for deadline := time.Now().Add(timescale.D(time.Minute)); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, "left")); err == nil {
				return
			}
		}
		fmt.Fprintln(os.Stderr, "ptyhold: the holder did not stop")
		os.Exit(1)
	}
	if err := ptyHold(dir); err != nil {
		fmt.Fprintln(os.Stderr, "ptyhold:", err)
		os.Exit(1)
	}
}

func ptyHold(dir string) error {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	master := os.NewFile(uintptr(fd), "ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		return err
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		return err
	}
	tty := fmt.Sprintf("/dev/pts/%d", n)
	shell, err := os.OpenFile(tty, os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	var raw unix.Termios // no echo, no line editing: the screen shows only what was written
	if err := unix.IoctlSetTermios(int(shell.Fd()), unix.TCSETS, &raw); err != nil {
		return err
	}
	if _, err := master.WriteString("hunter2-typed\n"); err != nil {
		return err
	}
	screen, err := os.OpenFile(filepath.Join(dir, "screen"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if err != nil {
				return
			}
			screen.Write(buf[:n])
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "tty"), []byte(tty+"\n"), 0o644); err != nil {
		return err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "stop")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	unix.SetNonblock(int(shell.Fd()), true)
	left := make([]byte, 256)
	k, _ := shell.Read(left)
	return os.WriteFile(filepath.Join(dir, "left"), left[:max(k, 0)], 0o644)
}
