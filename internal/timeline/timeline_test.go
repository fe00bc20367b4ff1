package timeline

import (
	"bytes"
	"regexp"
	"sync"
	"testing"
)

func TestMark(t *testing.T) {
	var buf bytes.Buffer
	On() // the environment is read once; what follows sets the answer
	out, on = &buf, false
	Mark("off %d", 1)
	if buf.Len() != 0 {
		t.Fatalf("off, Mark printed %q", buf.String())
	}
	on = true
	defer func() { on = false }()
	Mark("task %s start", "t01")
	if !regexp.MustCompile(`^hgate: timeline +\d+\.\d{3} task t01 start\n$`).MatchString(buf.String()) {
		t.Fatalf("Mark printed %q", buf.String())
	}
}

// TestOnReadsTheEnvironment: HGATE_TIMELINE=1 turns the marks on, read at the first mark
// rather than at package initialisation.
func TestOnReadsTheEnvironment(t *testing.T) {
	t.Setenv(Env, "1")
	onOnce = sync.Once{}
	defer func() { onOnce, on = sync.Once{}, false }()
	if !On() {
		t.Fatalf("%s=1: On is false", Env)
	}
}
