package hooks_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/hooks"
)

// TestScriptRuns runs the installed hook with sh: the chained old hook first (its failure
// stops the hook with its exit status), then hgate by the recorded path, or on PATH when
// that path is gone.
func TestScriptRuns(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	fake := func(dir, name string) string {
		p := filepath.Join(dir, name)
		body := "#!/bin/sh\necho \"" + name + " $*\"\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name     string
		recorded string // "abs" = a fake hgate at an absolute path, "gone" = a missing path
		old      string // content of pre-commit.pre-hgate, "" = none
		wantOut  string
		wantCode int
	}{
		{"recorded path", "abs", "", "recorded-hgate hooks run pre-commit\n", 0},
		{"recorded path gone, PATH", "gone", "", "hgate hooks run pre-commit\n", 0},
		{"no recorded path, PATH", "", "", "hgate hooks run pre-commit\n", 0},
		{"old hook first", "abs", "#!/bin/sh\necho old\n", "old\nrecorded-hgate hooks run pre-commit\n", 0},
		{"old hook fails", "abs", "#!/bin/sh\necho old\nexit 7\n", "old\n", 7},
		{"old hook not executable is skipped", "abs", "-", "recorded-hgate hooks run pre-commit\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := t.TempDir()
			fake(bin, "hgate")
			recorded := ""
			switch tt.recorded {
			case "abs":
				recorded = fake(t.TempDir(), "recorded-hgate")
			case "gone":
				recorded = filepath.Join(t.TempDir(), "moved", "hgate")
			}
			dir := filepath.Join(t.TempDir(), "hooks")
			if _, err := hooks.Install(dir, recorded); err != nil {
				t.Fatal(err)
			}
			switch tt.old {
			case "":
			case "-":
				if err := os.WriteFile(filepath.Join(dir, "pre-commit.pre-hgate"), []byte("#!/bin/sh\nexit 1\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(filepath.Join(dir, "pre-commit.pre-hgate"), []byte(tt.old), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(dir, "pre-commit"))
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			out, err := cmd.Output()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode || string(out) != tt.wantOut {
				t.Errorf("exit %d, output %q; want exit %d, %q", code, out, tt.wantCode, tt.wantOut)
			}
			if strings.Contains(string(out), "recorded-hgate") && tt.recorded != "abs" {
				t.Error("ran a hgate that was not recorded")
			}
		})
	}
}
