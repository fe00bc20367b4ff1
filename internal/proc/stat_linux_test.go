package proc

import (
	"os"
	"os/exec"
	"slices"
	"testing"
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
