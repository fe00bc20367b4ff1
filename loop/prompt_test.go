package loop

import (
	"strings"
	"testing"
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
