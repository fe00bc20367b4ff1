package answer

import "testing"

func TestPyList(t *testing.T) {
	if got, want := pyList([]string{"task_042", "task_071"}), "['task_042', 'task_071']"; got != want {
		t.Fatalf("pyList = %s, want %s", got, want)
	}
}
