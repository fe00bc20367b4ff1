//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestTaskEnvironment: a wrapped command sees the environment its caller gave it, with or
// without Reap, and isolated. The shims also get GOMAXPROCS=1 (so that their runtime starts one P), and
// in a race build GORACE (so that they do not sleep at exit); a command whose environment
// did not set them still does not see them, and one that did sees its own values.
func TestTaskEnvironment(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	path := "PATH=" + os.Getenv("PATH")
	for _, tc := range []struct {
		name string
		env  []string
		want string
	}{
		{"scrubbed", []string{path}, "unset unset"},
		{"own GORACE", []string{path, "GORACE=halt_on_error=1 atexit_sleep_ms=0"}, "halt_on_error=1 atexit_sleep_ms=0 unset"},
		{"own GOMAXPROCS", []string{path, "GOMAXPROCS=3"}, "unset 3"},
	} {
		for _, p := range []Policy{{Write: []string{dir}}, {Write: []string{dir}, Reap: true}, {Write: []string{dir}, Isolate: true}} {
			if p.Isolate && Namespaces() != nil {
				continue
			}
			cmd := exec.Command("sh", "-c", `echo "${GORACE-unset} ${GOMAXPROCS-unset}"`)
			cmd.Dir, cmd.Env = dir, slices.Clone(tc.env)
			if err := Wrap(cmd, p); err != nil {
				t.Fatal(err)
			}
			if raceEnv != "" && !strings.Contains(tc.name, "GORACE") && !slices.Contains(cmd.Env, raceEnv) {
				t.Errorf("%s, reap=%v isolate=%v: the shim's environment %q lacks %s", tc.name, p.Reap, p.Isolate, cmd.Env, raceEnv)
			}
			if !strings.Contains(tc.name, "GOMAXPROCS") && !slices.Contains(cmd.Env, shimGOMAXPROCS) {
				t.Errorf("%s, reap=%v isolate=%v: the shim's environment %q lacks %s", tc.name, p.Reap, p.Isolate, cmd.Env, shimGOMAXPROCS)
			}
			out, err := cmd.CombinedOutput()
			if got := strings.TrimSpace(string(out)); err != nil || got != tc.want {
				t.Errorf("%s, reap=%v isolate=%v: the command saw GORACE and GOMAXPROCS %q (%v), want %q", tc.name, p.Reap, p.Isolate, got, err, tc.want)
			}
		}
	}
}
