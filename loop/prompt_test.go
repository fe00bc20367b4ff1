package loop

import (
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/config"
)

// TestPromptAllow pins how the context block states the allowlist: negations read as
// "except", and under the sandbox the slash-less patterns say their files are written in
// place only (sed -i is refused there).
func TestPromptAllow(t *testing.T) {
	for _, tc := range []struct {
		name      string
		allow     []string
		sandboxed bool
		want      []string
		not       []string
	}{
		{"plain", []string{"agent.sh"}, false, []string{"- You may change only: agent.sh\n"}, []string{"in place"}},
		{"negation", []string{"*.go", "!*_test.go", "PROGRAM.md"}, false,
			[]string{"- You may change only: *.go, PROGRAM.md, except *_test.go\n"}, []string{"!"}},
		{"reallowed", []string{"agent/", "!agent/x.py", "agent/x.py"}, false,
			[]string{"- You may change only: agent/, !agent/x.py, agent/x.py (in this order; the last pattern that matches decides, ! excludes)\n"}, nil},
		{"sandboxed", []string{"*.go", "!*_test.go", "agent/", "src/*.py"}, true,
			[]string{"- Files that only *.go match can be rewritten in place, not created, deleted or replaced by a rename: a tool that writes a temporary file beside them (sed -i, perl -i) is refused.\n"}, nil},
		{"sandboxed folders only", []string{"agent/", "src/*.py"}, true, nil, []string{"in place"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := buildPrompt(promptInput{Program: "# P\n", Iteration: 1, RunID: "r", Allow: tc.allow, Sandboxed: tc.sandboxed, MessageFile: "workspace/loop-message.txt"})
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("prompt lacks %q:\n%s", w, got)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(got, n) {
					t.Errorf("prompt has %q:\n%s", n, got)
				}
			}
		})
	}
}

// TestTrainReasons: with loop.train_visibility none, a Step 1 reason (which names train
// tasks, or counts them) reaches the agent as "step 1 failed", once; other reasons and
// other settings are as the gate gave them.
func TestTrainReasons(t *testing.T) {
	in := []string{"step 1: 3/4 suite tasks passed (75%), below the threshold 80%",
		"step 1: 1 train task(s) that passed at the gated commit fail now, and on 2 reruns: b7 (gate.keep_passing)",
		"step 2: val_score 0.5000 < best 0.7500"}
	got := TrainReasons(in, config.TrainNone)
	if len(got) != 2 || strings.Contains(strings.Join(got, "\n"), "b7") || strings.Contains(got[0], "3/4") || got[1] != in[2] {
		t.Fatalf("none: %q", got)
	}
	for _, v := range []string{config.TrainTraces, config.TrainScores} {
		if got := TrainReasons(in, v); !slices.Equal(got, in) {
			t.Fatalf("%s: %q", v, got)
		}
	}
}
