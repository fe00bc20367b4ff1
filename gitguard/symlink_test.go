package gitguard

import (
	"fmt"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TestResolveLink resolves symlink targets in a small tree as the kernel
// would: chains of links that each look harmless are followed.
func TestResolveLink(t *testing.T) {
	links := map[string]string{
		"d/PROGRAM.md/up":  "..",
		"d/PROGRAM.md/esc": "up/../../..",
		"d/PROGRAM.md/in":  "up/../file.txt",
		"here":             ".",
		"togit":            "here/.git/config",
		"loop1":            "loop2",
		"loop2":            "loop1",
		"ws":               "workspace",
		"deep/up2":         "../d/PROGRAM.md/up",
	}
	v := newLinkView(func(p string) (string, error) {
		if t, ok := links[p]; ok {
			return t, nil
		}
		return "", fmt.Errorf("%s is no link", p)
	})
	for p := range links {
		v.add(p, filemode.Symlink)
	}
	for _, p := range []string{"file.txt", "d/PROGRAM.md/agent.py", "deep/x", "workspace/suite.json"} {
		v.add(p, filemode.Regular)
	}
	tests := []struct {
		at, target, want string
	}{
		{"a", "file.txt", ""},
		{"d/x", "../file.txt", ""},
		{"d/x", "../..", "points outside the repository"},
		{"a", "/etc/passwd", "points outside the repository"},
		{"a", "", "has an empty target"},
		{"d/PROGRAM.md/up", "..", ""},
		{"d/PROGRAM.md/esc", "up/../../..", "points outside the repository"},
		{"d/PROGRAM.md/in", "up/../file.txt", ""},
		{"x", "d/PROGRAM.md/esc", "points outside the repository"},
		{"x", "d/PROGRAM.md/up/..", ""},
		{"x", "d/PROGRAM.md/up/../..", "points outside the repository"},
		{"deep/y", "up2/..", ""},
		{"deep/y", "up2/../..", "points outside the repository"},
		{"a", ".git/config", "resolves into .git"},
		{"a", "sub/.GIT/hooks", "resolves into .git"},
		{"togit", "here/.git/config", "resolves into .git"},
		{"a", "loop1", "resolves through too many symlinks"},
		{"a", "workspace/suite.json", "resolves into the workspace workspace"},
		{"a", "ws/suite.json", "resolves into the workspace workspace"},
		{"a", "workspaces", ""},
		{"a", "file.txt/../../..", ""}, // a file in the middle: it dangles
		{"a", "nodir/../../..", "points outside the repository"},
		{"a", "nodir/sub/../..", ""},
		{"a", "./d//PROGRAM.md/./agent.py", ""},
	}
	for _, tc := range tests {
		if got := v.resolveLink(tc.at, tc.target, "workspace"); got != tc.want {
			t.Errorf("%s -> %s: %q, want %q", tc.at, tc.target, got, tc.want)
		}
	}
}
