package benchmark

import (
	"bytes"
	"os"
	"testing"
	"time"
)

func TestNewProgress(t *testing.T) {
	clockAt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now = func() time.Time { return clockAt }
	defer func() { now = time.Now }()

	var buf bytes.Buffer
	p := newProgress(&buf, "train", 3, true, true)
	steps := []struct {
		after  time.Duration
		result Result
		want   string
	}{
		{42 * time.Second, Result{Reward: ptr(1)}, "\rtrain  1/3  passed 1  elapsed 0:42  eta 1:24"},
		{time.Hour, Result{Reward: nil}, "\rtrain  2/3  passed 1  elapsed 1:00:42  eta 30:21"},
		{18 * time.Second, Result{Reward: ptr(0.5)}, "\rtrain  3/3  passed 2  elapsed 1:01:00  eta 0:00 \n"},
	}
	for i, s := range steps {
		clockAt = clockAt.Add(s.after)
		buf.Reset()
		p(i+1, 3, s.result)
		if buf.String() != s.want {
			t.Errorf("step %d: %q, want %q", i+1, buf.String(), s.want)
		}
	}
}

// TestNewProgressLines: on a writer that is not a terminal, one plain line per update.
func TestNewProgressLines(t *testing.T) {
	clockAt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now = func() time.Time { return clockAt }
	defer func() { now = time.Now }()

	var buf bytes.Buffer
	p := NewProgress(&buf, "train", 2)
	clockAt = clockAt.Add(10 * time.Second)
	p(1, 2, Result{Reward: ptr(1)})
	clockAt = clockAt.Add(10 * time.Second)
	p(2, 2, Result{})
	want := "train  1/2  passed 1  elapsed 0:10  eta 0:10\ntrain  2/2  passed 1  elapsed 0:20  eta 0:00\n"
	if buf.String() != want {
		t.Errorf("%q, want %q", buf.String(), want)
	}
}

// TestNewCountProgress: the held-out split's line counts tasks, never passes.
func TestNewCountProgress(t *testing.T) {
	clockAt := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now = func() time.Time { return clockAt }
	defer func() { now = time.Now }()

	var buf bytes.Buffer
	p := NewCountProgress(&buf, "trial 2", 2)
	clockAt = clockAt.Add(10 * time.Second)
	p(1, 2, Result{Reward: ptr(1)})
	p(2, 2, Result{Reward: ptr(0)})
	want := "trial 2  1/2  elapsed 0:10  eta 0:10\ntrial 2  2/2  elapsed 0:10  eta 0:00\n"
	if buf.String() != want {
		t.Errorf("%q, want %q", buf.String(), want)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) || IsTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer is not a terminal")
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if IsTerminal(null) {
		t.Error("/dev/null is a character device but not a terminal")
	}
}
