package loop

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// A folder of the agent's and one programs are run from overlap when one holds the other,
// as written or through links, and not when they only share a prefix of their names.
func TestOverlap(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "home", ".local")
	if err := os.MkdirAll(filepath.Join(real, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "bin")
	if err := os.Symlink(filepath.Join(real, "bin"), link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{real, filepath.Join(real, "bin"), true},
		{filepath.Join(real, "bin"), real, true},
		{real, real, true},
		{real + "x", real, false},
		{filepath.Join(dir, "home", ".loc"), real, false},
		{real, link, true},                                 // a PATH entry that links into the agent's folder
		{filepath.Join(link, "new", "folder"), real, true}, // not there yet: its existing part resolved
		{filepath.Join(dir, "other"), link, false},
	} {
		if got := overlap(c.a, c.b); got != c.want {
			t.Errorf("overlap(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// The folders a link leads through are those of every link met after the first and the
// one that holds, or would hold, what it leads to; a loop of links ends the walk.
func TestLinkFolders(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"bin", "sdk/v1", "stable", "other"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"sdk/git", "stable/git", "bin/rustup"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"bin/git":     filepath.Join(dir, "sdk", "git"),            // into another folder
		"bin/chain":   filepath.Join(dir, "sdk", "current", "git"), // through sdk/current
		"sdk/current": "../stable",
		"bin/absent":  filepath.Join(dir, "sdk", "new", "tool"), // not there yet
		"bin/cargo":   "rustup",                                 // in its own folder
		"bin/loop":    "loop",
		"bin/hop":     "../other/hop",
		"other/hop":   "../sdk/git",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "bin")
	j := func(p string) string { return filepath.Join(dir, p) }
	for name, want := range map[string][]string{
		"git":    {j("sdk")},
		"chain":  {j("sdk"), j("stable")},
		"absent": {j("sdk/new")},
		"cargo":  {bin},
		"loop":   {bin}, // its own folder, then ELOOP
		"hop":    {j("other"), j("sdk")},
	} {
		got := linkFolders(bin, name)
		if !slices.Equal(got, want) {
			t.Errorf("linkFolders(%s) = %q, want %q", name, got, want)
		}
	}
}

// A link on PATH into a folder of the agent's, or into the repository, is a folder
// programs are run from; a folder below the one it leads to is not.
func TestRunFromLinks(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "repo")
	for _, d := range []string{"path", "sdk/cache", "repo/tools"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for target, name := range map[string]string{"sdk/git": "path/git", "repo/tools/run": "path/run"} {
		if err := os.WriteFile(filepath.Join(dir, target), nil, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(dir, target), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", filepath.Join(dir, "path"))
	from := runFromFolders(root)
	meets := func(p string) bool {
		return slices.ContainsFunc(from, func(f runFrom) bool { return f.meets(p) })
	}
	for p, want := range map[string]bool{
		filepath.Join(dir, "sdk"):          true,
		dir:                                true,
		root:                               true,
		filepath.Join(root, "tools"):       true,
		filepath.Join(dir, "sdk", "cache"): false,
		filepath.Join(dir, "elsewhere"):    false,
	} {
		if got := meets(p); got != want {
			t.Errorf("a write set %s meets a folder programs run from: %v, want %v", p, got, want)
		}
	}
}

// A sandboxed run does not start while a link on PATH leads into the repository, where
// allow lets the agent write, and names the link; a link elsewhere is no reason.
func TestPlantableLinkIntoRepository(t *testing.T) {
	repo := gittest.New(t)
	repo.WriteFiles(map[string]string{"tools/run": "#!/bin/sh\n"})
	repo.Commit("init")
	g, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	r := &runner{repo: g, cfg: config.Loop{Agent: []string{"sh", "bot.sh"}, Sandbox: config.Sandbox{Enabled: true}}}
	if err := r.plantable(); err != nil {
		t.Fatalf("no link on PATH yet: %v", err)
	}
	if err := os.Symlink(filepath.Join(g.Root(), "tools", "run"), filepath.Join(bin, "run")); err != nil {
		t.Fatal(err)
	}
	err = r.plantable()
	if err == nil || !strings.Contains(err.Error(), filepath.Join(bin, "run")+", a program on PATH, leads through its links") || !strings.Contains(err.Error(), "(allow)") {
		t.Fatalf("a link on PATH into the repository: %v", err)
	}
}
