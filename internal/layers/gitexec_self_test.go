package layers

import (
	"os"
	"path/filepath"
	"testing"
)

// The scan finds each way of starting git it claims to, and nothing else.
func TestGitStartsScan(t *testing.T) {
	for name, tc := range map[string]struct {
		src  string
		want int
	}{
		"literal":       {`import "os/exec"; func f() { exec.Command("git", "status") }`, 1},
		"context":       {`import "os/exec"; func f() { exec.CommandContext(ctx, "/usr/bin/git") }`, 1},
		"alias":         {`import x "os/exec"; func f() { x.Command("git") }`, 1},
		"const":         {`import "os/exec"; const prog = "git"; func f() { exec.Command(prog) }`, 1},
		"assigned":      {`import "os/exec"; func f() { p := "git"; exec.Command(p) }`, 1},
		"named path":    {`import "os/exec"; func f() { exec.Command(r.gitPath, "x") }`, 1},
		"lookpath":      {`import "os/exec"; func f() { exec.LookPath("git") }`, 1},
		"cmd literal":   {`import "os/exec"; func f() { _ = &exec.Cmd{Path: gitBin} }`, 1},
		"startprocess":  {`import "os"; func f() { os.StartProcess("git", nil, nil) }`, 1},
		"other program": {`import "os/exec"; func f() { exec.Command("sh", "-c", "git status") }`, 0},
		"no import":     {`func f() { exec.Command("git") }`, 0},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.go")
			if err := os.WriteFile(p, []byte("package x\n"+tc.src+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := gitStarts(t, p); len(got) != tc.want {
				t.Errorf("found %v, want %d", got, tc.want)
			}
		})
	}
}
