package timeline

import (
	"bytes"
	"regexp"
	"testing"
)

func TestMark(t *testing.T) {
	var buf bytes.Buffer
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
