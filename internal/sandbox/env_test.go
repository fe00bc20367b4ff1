//go:build unix

package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestTaskEnvironment: a wrapped command sees the environment its caller gave it, with or
// without Reap. In a race build the shims also get GORACE (so that they do not sleep at
// exit), and a command whose environment did not set GORACE still does not see it.
func TestTaskEnvironment(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	path := "PATH=" + os.Getenv("PATH")
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"scrubbed", []string{path}, "unset"},
		{"own GORACE", []string{path, "GORACE=halt_on_error=1 atexit_sleep_ms=0"}, "halt_on_error=1 atexit_sleep_ms=0"},
	} {
		for _, reap := range []bool{false, true} {
			cmd := exec.Command("sh", "-c", `echo "${GORACE-unset}"`)
			cmd.Dir, cmd.Env = dir, slices.Clone(tc.env)
			if err := Wrap(cmd, Policy{Write: []string{dir}, Reap: reap}); err != nil {
				t.Fatal(err)
			}
			if raceEnv != "" && tc.want == "unset" && !slices.Contains(cmd.Env, raceEnv) {
				t.Errorf("%s, reap=%v: the shim's environment %q lacks %s", tc.name, reap, cmd.Env, raceEnv)
			}
			out, err := cmd.CombinedOutput()
			if got := strings.TrimSpace(string(out)); err != nil || got != tc.want {
				t.Errorf("%s, reap=%v: the command saw GORACE %q (%v), want %q", tc.name, reap, got, err, tc.want)
			}
		}
	}
}
