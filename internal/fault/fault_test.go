//go:build unix

package fault

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// With HGATE_FAULT_PAUSE the process stops at its point, says so with its pid through
// DIR/reached, goes on when DIR/resume is written, and pauses only once.
func TestPause(t *testing.T) {
	paused = sync.Once{} // a fresh process, as far as the pause knows (-count)
	dir := t.TempDir()
	for _, name := range []string{"reached", "resume"} {
		if err := syscall.Mkfifo(filepath.Join(dir, name), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(Env, "ref-locked:refs/hgate/gated")
	t.Setenv(PauseEnv, dir)
	Point("ref-locked:refs/hgate/best") // another point: not this one
	done := make(chan struct{})
	go func() {
		Point("ref-locked:refs/hgate/gated")
		close(done)
	}()
	got, err := os.ReadFile(filepath.Join(dir, "reached")) // blocks until the point is reached
	if err != nil || strings.TrimSpace(string(got)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("reached said %q, %v; want this pid", got, err)
	}
	select {
	case <-done:
		t.Fatal("went on before resume")
	default:
	}
	if err := os.WriteFile(filepath.Join(dir, "resume"), []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	<-done
	Point("ref-locked:refs/hgate/gated") // once only: returns at once
}

// Denied is true only for the facility HGATE_FAULT denies, and never for a crash point.
func TestDenied(t *testing.T) {
	t.Setenv(Env, "")
	if Denied("landlock") {
		t.Fatal("denied with HGATE_FAULT unset")
	}
	t.Setenv(Env, DenyPrefix+"landlock")
	if !Denied("landlock") || Denied("namespaces") {
		t.Fatal("deny:landlock must deny landlock and nothing else")
	}
	t.Setenv(Env, "landlock")
	if Denied("landlock") {
		t.Fatal("a crash point's name is not a denial")
	}
}
