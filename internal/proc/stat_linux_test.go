package proc

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"
)

func TestReadStatAndChildren(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PPid != os.Getppid() || st.StartTicks == 0 || st.State != 'R' && st.State != 'S' {
		t.Errorf("this process: %+v (parent %d)", st, os.Getppid())
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	if kids := Children(os.Getpid()); !slices.Contains(kids, cmd.Process.Pid) {
		t.Errorf("Children = %v, want %d among them", kids, cmd.Process.Pid)
	}
	if _, err := ReadStat(-1); err == nil {
		t.Errorf("ReadStat(-1): no error")
	}
}

// TestKillBelow: every process below pid is killed, grandchildren included, and pid
// itself is not: the shell waits for its children and exits 0 once they are dead.
func TestKillBelow(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sh -c 'sleep 1000 & wait' & sleep 1000 & echo started; wait; exit 0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line := make([]byte, 8)
	if n, _ := io.ReadFull(out, line); string(line[:n]) != "started\n" {
		t.Fatalf("the shell said %q", line[:n])
	}
	// The inner shell's sleep may not be forked yet: wait for all three.
	for len(Descendants(cmd.Process.Pid)) < 3 {
		time.Sleep(time.Millisecond)
	}
	below := map[int]uint64{}
	for _, d := range Descendants(cmd.Process.Pid) {
		if st, err := ReadStat(d); err == nil {
			below[d] = st.StartTicks
		}
	}
	KillBelow(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Errorf("the shell above: %v, want exit 0 once its children died", err)
	}
	// Every one of them dies, the inner shell's sleep too: killed before its shell, it is
	// never orphaned to init first, out of the tree (the shell above is no subreaper).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var alive []int
		for d, start := range below {
			if st, err := ReadStat(d); err == nil && st.StartTicks == start && st.State != 'Z' && st.State != 'X' {
				alive = append(alive, d)
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, d := range alive {
				syscall.Kill(d, syscall.SIGKILL)
			}
			t.Fatalf("processes %v below the shell are still alive after KillBelow", alive)
		}
	}
}
