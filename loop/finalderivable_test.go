package loop

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/hgate/hgate/workspace"
)

// TestWarnFinalDerivable: a new run warns when split.json is of the format before the final
// ids were listed among the test ids (the agent can work them out), and not otherwise.
func TestWarnFinalDerivable(t *testing.T) {
	const sha = `"final_sha": "hmac-sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"`
	for _, tt := range []struct {
		name, file string
		warned     bool
	}{
		{"before the format", `{"seed": 1, "train": ["a"], "test": ["b"], ` + sha + `, "final_tasks": 1}`, true},
		{"sealed", `{"seed": 1, "train": ["a"], "test": ["b", "c"], ` + sha + `, "final_tasks": 1, "format": 2}`, false},
		{"no final split", `{"seed": 1, "train": ["a"], "test": ["b"]}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace.Dir(t.TempDir())
			if err := os.WriteFile(ws.Split(), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			opener{&runner{ws: ws, log: &log}}.warnFinalDerivable()
			if got := strings.Contains(log.String(), "the agent can work out which tasks are final"); got != tt.warned {
				t.Errorf("warned %v, want %v: %q", got, tt.warned, log.String())
			}
		})
	}
}
