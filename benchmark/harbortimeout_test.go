package benchmark

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/config"
)

func TestWithAgentTimeout(t *testing.T) {
	tests := []struct{ in, want string }{
		{"[agent]\ntimeout_sec = 60\n", ""},
		{"[task]\nname = \"x\"\n[agent]\ntimeout_sec=5\n", ""},
		{"[agent]\nuser = \"root\"\n[verifier]\ntimeout_sec = 9\n", "[agent]\ntimeout_sec = 90 # set by hgate: benchmark.task_timeout (the task set none)\nuser = \"root\"\n[verifier]\ntimeout_sec = 9\n"},
		{"[verifier]\ntimeout_sec = 9\n", "[verifier]\ntimeout_sec = 9\n\n[agent]\ntimeout_sec = 90 # set by hgate: benchmark.task_timeout (the task set none)\n"},
	}
	for _, tt := range tests {
		out, changed := withAgentTimeout([]byte(tt.in), "90")
		if changed != (tt.want != "") || changed && string(out) != tt.want {
			t.Errorf("%q: %v %q, want %q", tt.in, changed, out, tt.want)
		}
	}
}

// TestHarborAgentTimeouts: in a clean room, an asked task without an agent timeout gets
// benchmark.task_timeout in the room's task.toml — a new file over the copy's name; a
// name that is not a regular file of one link (here a hard link to the user's file) is
// neither read nor written through, and the user's file stays as it was; outside a room
// nothing is written.
func TestHarborAgentTimeouts(t *testing.T) {
	user, room := t.TempDir(), t.TempDir()
	orig := filepath.Join(user, "task.toml")
	if err := os.WriteFile(orig, []byte("[verifier]\ntimeout_sec = 9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"bare", "set", "linked"} {
		os.MkdirAll(filepath.Join(room, "ds", id), 0o755)
	}
	if err := os.Link(orig, filepath.Join(room, "ds", "linked", "task.toml")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(room, "ds", "bare", "task.toml"), []byte("[verifier]\ntimeout_sec = 9\n"), 0o644)
	os.WriteFile(filepath.Join(room, "ds", "set", "task.toml"), []byte("[agent]\ntimeout_sec = 60\n"), 0o644)
	r := &Runner{Dir: room, Config: config.Benchmark{TaskTimeout: 90 * time.Second, Harbor: &config.Harbor{Path: "ds"}}}
	if set, _ := r.harborAgentTimeouts([]string{"bare", "set"}); len(set) != 0 {
		t.Fatalf("outside a room: %v", set)
	}
	r.TempRoot = t.TempDir()
	set, err := r.harborAgentTimeouts([]string{"bare", "set", "missing", "linked"})
	if err != nil || strings.Join(set, ",") != "bare" {
		t.Fatalf("set %v, err %v", set, err)
	}
	got, _ := os.ReadFile(filepath.Join(room, "ds", "bare", "task.toml"))
	if !strings.Contains(string(got), "[agent]\ntimeout_sec = 90 ") {
		t.Errorf("the room's task.toml:\n%s", got)
	}
	if data, _ := os.ReadFile(orig); string(data) != "[verifier]\ntimeout_sec = 9\n" {
		t.Errorf("the user's task.toml was written through the link:\n%s", data)
	}
}
