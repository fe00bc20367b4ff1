package loop

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hgate/hgate/gate"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// With progress on, the loop says where the agent's output goes, then how long it has
// run and its last line; it stops saying so when told.
func TestWatchAgent(t *testing.T) {
	defer func(d time.Duration) { agentWatchEvery = d }(agentWatchEvery)
	agentWatchEvery = time.Millisecond
	out := filepath.Join(t.TempDir(), "agent.stdout")
	if err := os.WriteFile(out, []byte("thinking\nediting agent.sh\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var w syncBuffer
	r := &runner{env: &gate.Env{Progress: &w}, now: time.Now}
	stop := r.watchAgent(3, out)
	// Waits for the ticker, however slow the machine; a minute without it is a failure.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(w.String(), "last output: editing agent.sh"); {
		if time.Now().After(deadline) {
			t.Fatalf("no periodic line within a minute: %q", w.String())
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	got := w.String()
	if !strings.HasPrefix(got, "[loop] iteration 3: agent running; its output: "+out+"\n") {
		t.Errorf("first line: %q", got)
	}
	stop2 := (&runner{env: &gate.Env{}, now: time.Now}).watchAgent(1, out)
	stop2() // progress off: nothing to stop, nothing written
}

// The progress line shows a streamed JSON event of claude's or codex's as what it says,
// not as raw JSON: the tool claude is running, the command codex runs.
func TestWatchAgentDescribesEvents(t *testing.T) {
	defer func(d time.Duration) { agentWatchEvery = d }(agentWatchEvery)
	agentWatchEvery = time.Millisecond
	for events, want := range map[string]string{
		`{"type":"system","subtype":"init","session_id":"s"}` + "\n" +
			`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test"}}]},"session_id":"s"}` + "\n": "last output: tool Bash",
		`{"type":"thread.started","thread_id":"t"}` + "\n" +
			`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc 'go test ./...'"}}` + "\n": "last output: command /bin/bash -lc 'go test ./...'",
	} {
		out := filepath.Join(t.TempDir(), "agent.stdout")
		if err := os.WriteFile(out, []byte(events), 0o644); err != nil {
			t.Fatal(err)
		}
		var w syncBuffer
		stop := (&runner{env: &gate.Env{Progress: &w}, now: time.Now}).watchAgent(1, out)
		for deadline := time.Now().Add(time.Minute); !strings.Contains(w.String(), want); {
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("no %q within a minute: %q", want, w.String())
			}
			time.Sleep(time.Millisecond)
		}
		stop()
	}
}
