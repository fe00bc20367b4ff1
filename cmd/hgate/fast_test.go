package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
)

// TestRunFastMatchesKong: the three command lines runFast answers before Kong builds its
// model print and exit exactly as Kong's path does, in every state the hook meets: no
// repository, no commit, no hgate.yaml, a commit inside and outside allow, a broken
// hgate.yaml, file_guard off; and no other command line is taken from Kong.
func TestRunFastMatchesKong(t *testing.T) {
	repo := gittest.New(t)
	t.Chdir(repo.Path("."))
	const cfg = "allow: [src/]\nbenchmark:\n  tasks: {glob: \"tasks/*\"}\n  run: [sh, check.sh]\n"
	states := []struct {
		name string
		edit func()
		exit int
	}{
		{"no commit", func() {}, 2},
		{"no hgate.yaml", func() { repo.Write("x", "x\n"); repo.Commit("x") }, 2},
		{"allowed", func() {
			repo.Write("hgate.yaml", cfg)
			repo.Commit("cfg")
			repo.Write("src/a", "a\n")
			repo.Git("add", "src/a")
		}, 0},
		{"outside allow", func() { repo.Write("b", "b\n"); repo.Git("add", "b") }, 1},
		{"broken hgate.yaml", func() {
			repo.Write("hgate.yaml", "allow: [src/\n")
			repo.Git("commit", "-qam", "broken", "--no-verify")
		}, 2},
		{"file_guard off", func() {
			repo.Write("hgate.yaml", "file_guard: false\n"+cfg)
			repo.Git("commit", "-qam", "off", "--no-verify")
			repo.Write("c", "c\n")
			repo.Git("add", "c")
		}, 0},
	}
	for _, s := range states {
		s.edit()
		for _, args := range [][]string{{"--version"}, {"hooks", "run", "pre-commit"}, {"guard"}} {
			var fast, kong [2]bytes.Buffer
			got, ok := runFast(args, &fast[0], &fast[1])
			want := runWith(context.Background(), args, &kong[0], &kong[1], false)
			if !ok || got != want || fast[0].String() != kong[0].String() || fast[1].String() != kong[1].String() {
				t.Errorf("%s: hgate %q: taken %v, exit %d, stdout %q, stderr %q\nKong's path: exit %d, stdout %q, stderr %q",
					s.name, args, ok, got, fast[0].String(), fast[1].String(), want, kong[0].String(), kong[1].String())
			}
			if args[0] == "hooks" && want != s.exit {
				t.Errorf("%s: the hook exits %d, want %d\n%s", s.name, want, s.exit, kong[1].String())
			}
		}
	}
	for _, args := range [][]string{{}, {"--version", "--json"}, {"-v", "--version"}, {"hooks", "run"},
		{"hooks", "run", "pre-commit", "--json"}, {"hooks", "run", "pre-push"}, {"-C", ".", "hooks", "run", "pre-commit"},
		{"guard", "--json"}, {"-C", ".", "guard"}, {"guard", "x"}} {
		if _, ok := runFast(args, &bytes.Buffer{}, &bytes.Buffer{}); ok {
			t.Errorf("hgate %q was answered before Kong's model", args)
		}
	}
	t.Setenv("COMP_LINE", "hgate guard")
	if _, ok := runFast([]string{"guard"}, &bytes.Buffer{}, &bytes.Buffer{}); ok {
		t.Error("a shell's completion of guard was not left to Kong")
	}
	t.Setenv("COMP_LINE", "")
	t.Setenv("HGATE_LOOP_SOCKET", "/nonexistent")
	for _, args := range [][]string{{"hooks", "run", "pre-commit"}, {"guard"}} {
		if _, ok := runFast(args, &bytes.Buffer{}, &bytes.Buffer{}); ok {
			t.Errorf("inside the loop's sandbox hgate %q was not forwarded", args)
		}
	}
}
