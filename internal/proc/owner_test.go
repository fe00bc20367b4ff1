package proc

import (
	"os"
	"os/exec"
	"runtime"
	"testing"
)

func TestOwner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times need /proc")
	}
	me := Self()
	if me.PID != os.Getpid() || me.StartTicks == 0 {
		t.Fatalf("Self() = %+v", me)
	}
	got, rest, ok := ParseTag(me.Tag() + "-123456")
	if !ok || got != me || rest != "123456" {
		t.Errorf("ParseTag(%q) = %+v, %q, %v", me.Tag()+"-123456", got, rest, ok)
	}
	for _, bad := range []string{"123456", "12-34", "x-1-2", "0-5-1", "-1-2-3"} {
		if _, _, ok := ParseTag(bad); ok {
			t.Errorf("ParseTag(%q) accepted", bad)
		}
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Owner{PID: cmd.ProcessState.Pid(), StartTicks: me.StartTicks}
	tests := []struct {
		name string
		o    Owner
		want bool
	}{
		{"this process", me, false},
		{"this pid, another start", Owner{PID: me.PID, StartTicks: me.StartTicks + 1}, true},
		{"a reaped process", dead, true},
		{"start time unknown", Owner{PID: dead.PID}, false},
	}
	for _, tt := range tests {
		if got := tt.o.Gone(); got != tt.want {
			t.Errorf("%s: Gone() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
