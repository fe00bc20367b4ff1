package hooks_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/hooks"
)

const foreign = "#!/bin/sh\necho lint\n"

// hookFile describes a file in the hooks folder: content, or a symlink target.
type hookFile struct {
	content string
	link    string
}

func setupHooks(t *testing.T, files map[string]hookFile) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, f := range files {
		p := filepath.Join(dir, name)
		if f.link != "" {
			if err := os.Symlink(f.link, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(f.content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// snapshotHooks returns the folder's files as they are now (dot files are temporaries).
func snapshotHooks(t *testing.T, dir string) map[string]hookFile {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]hookFile{}
	for _, de := range des {
		p := filepath.Join(dir, de.Name())
		if de.Type()&os.ModeSymlink != 0 {
			l, err := os.Readlink(p)
			if err != nil {
				t.Fatal(err)
			}
			out[de.Name()] = hookFile{link: l}
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s is not executable", de.Name())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[de.Name()] = hookFile{content: string(b)}
	}
	return out
}

func sameFiles(t *testing.T, got, want map[string]hookFile) {
	t.Helper()
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("%s missing", name)
		} else if g != w {
			t.Errorf("%s = %+v, want %+v", name, g, w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected file %s", name)
		}
	}
}

func TestInstall(t *testing.T) {
	ours := string(hooks.Script("pre-commit", "/usr/local/bin/hgate"))
	oursElsewhere := string(hooks.Script("pre-commit", "/opt/old/hgate"))
	tests := []struct {
		name    string
		before  map[string]hookFile
		action  hooks.Action
		after   map[string]hookFile
		wantErr string
	}{
		{"empty folder", nil, hooks.Installed, map[string]hookFile{"pre-commit": {content: ours}}, ""},
		{"already ours", map[string]hookFile{"pre-commit": {content: ours}}, hooks.Unchanged,
			map[string]hookFile{"pre-commit": {content: ours}}, ""},
		{"ours with another hgate path", map[string]hookFile{"pre-commit": {content: oursElsewhere}}, hooks.Updated,
			map[string]hookFile{"pre-commit": {content: ours}}, ""},
		{"ours, chained earlier", map[string]hookFile{"pre-commit": {content: ours}, "pre-commit.pre-hgate": {content: foreign}}, hooks.Unchanged,
			map[string]hookFile{"pre-commit": {content: ours}, "pre-commit.pre-hgate": {content: foreign}}, ""},
		{"foreign hook", map[string]hookFile{"pre-commit": {content: foreign}}, hooks.Chained,
			map[string]hookFile{"pre-commit": {content: ours}, "pre-commit.pre-hgate": {content: foreign}}, ""},
		{"foreign symlink", map[string]hookFile{"pre-commit": {link: "../../tools/lint-hook"}}, hooks.Chained,
			map[string]hookFile{"pre-commit": {content: ours}, "pre-commit.pre-hgate": {link: "../../tools/lint-hook"}}, ""},
		{"foreign that mentions the marker late", map[string]hookFile{"pre-commit": {content: foreign + hooks.Marker + "\n"}}, hooks.Chained,
			map[string]hookFile{"pre-commit": {content: ours}, "pre-commit.pre-hgate": {content: foreign + hooks.Marker + "\n"}}, ""},
		{"foreign and an old one", map[string]hookFile{"pre-commit": {content: foreign}, "pre-commit.pre-hgate": {content: "#!/bin/sh\n"}}, "",
			map[string]hookFile{"pre-commit": {content: foreign}, "pre-commit.pre-hgate": {content: "#!/bin/sh\n"}},
			"is not hgate's and"},
		{"other hooks untouched", map[string]hookFile{"commit-msg": {content: foreign}}, hooks.Installed,
			map[string]hookFile{"pre-commit": {content: ours}, "commit-msg": {content: foreign}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := setupHooks(t, tt.before)
			res, err := hooks.Install(dir, "/usr/local/bin/hgate")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != 1 || res[0].Action != tt.action || res[0].Path != filepath.Join(dir, "pre-commit") {
					t.Fatalf("results = %+v, want one %s at %s", res, tt.action, filepath.Join(dir, "pre-commit"))
				}
			}
			sameFiles(t, snapshotHooks(t, dir), tt.after)
			if tt.wantErr != "" {
				return
			}
			// Idempotent: a second install changes nothing.
			res, err = hooks.Install(dir, "/usr/local/bin/hgate")
			if err != nil || res[0].Action != hooks.Unchanged {
				t.Fatalf("second install: %+v, %v; want unchanged", res, err)
			}
			sameFiles(t, snapshotHooks(t, dir), tt.after)
		})
	}
}

// Hooks as lefthook 2.x and the pre-commit framework 3.x write them (abridged).
const (
	lefthookHook  = "#!/bin/sh\n\nif [ \"$LEFTHOOK\" = \"0\" ]; then\n  exit 0\nfi\ncall_lefthook run \"pre-commit\" \"$@\"\n"
	precommitHook = "#!/usr/bin/env bash\n# File generated by pre-commit: https://pre-commit.com\n# ID: 138fd403232d2ddd5efb44317e38bf03\nexec pre-commit hook-impl \"$@\"\n"
)

// legacyOurs is hgate's script as it was when it kept the hook it replaced as NAME.old.
var legacyOurs = strings.ReplaceAll(string(hooks.Script("pre-commit", "/usr/local/bin/hgate")), "pre-commit.pre-hgate", "pre-commit.old")

func TestInstallBehindManagers(t *testing.T) {
	ours := string(hooks.Script("pre-commit", "/usr/local/bin/hgate"))
	tests := []struct {
		name    string
		before  map[string]hookFile
		action  hooks.Action
		path    string // where hgate's hook is
		manager string
		after   map[string]hookFile
	}{
		{"lefthook", map[string]hookFile{"pre-commit": {content: lefthookHook}}, hooks.Installed, "pre-commit.old", "lefthook",
			map[string]hookFile{"pre-commit": {content: lefthookHook}, "pre-commit.old": {content: ours}}},
		{"lefthook, which kept a hook", map[string]hookFile{"pre-commit": {content: lefthookHook}, "pre-commit.old": {content: foreign}}, hooks.Chained, "pre-commit.old", "lefthook",
			map[string]hookFile{"pre-commit": {content: lefthookHook}, "pre-commit.old": {content: ours}, "pre-commit.pre-hgate": {content: foreign}}},
		{"pre-commit, which kept a hook", map[string]hookFile{"pre-commit": {content: precommitHook}, "pre-commit.legacy": {content: foreign}}, hooks.Chained, "pre-commit.legacy", "pre-commit",
			map[string]hookFile{"pre-commit": {content: precommitHook}, "pre-commit.legacy": {content: ours}, "pre-commit.pre-hgate": {content: foreign}}},
		{"pre-commit, ours in its slot", map[string]hookFile{"pre-commit": {content: precommitHook}, "pre-commit.legacy": {content: ours}}, hooks.Unchanged, "pre-commit.legacy", "pre-commit",
			map[string]hookFile{"pre-commit": {content: precommitHook}, "pre-commit.legacy": {content: ours}}},
		{"ours from before pre-hgate: the kept hook moves", map[string]hookFile{"pre-commit": {content: legacyOurs}, "pre-commit.old": {content: foreign}}, hooks.Updated, "pre-commit", "",
			map[string]hookFile{"pre-commit": {content: ours}, "pre-commit.pre-hgate": {content: foreign}}},
		{"ours from before pre-hgate, moved to .old by lefthook", map[string]hookFile{"pre-commit": {content: lefthookHook}, "pre-commit.old": {content: legacyOurs}}, hooks.Updated, "pre-commit.old", "lefthook",
			map[string]hookFile{"pre-commit": {content: lefthookHook}, "pre-commit.old": {content: ours}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := setupHooks(t, tt.before)
			before := snapshotHooks(t, dir)
			res, err := hooks.Install(dir, "/usr/local/bin/hgate")
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 || res[0].Action != tt.action || res[0].Path != filepath.Join(dir, tt.path) || res[0].Manager != tt.manager {
				t.Fatalf("results = %+v, want one %s at %s behind %q", res, tt.action, tt.path, tt.manager)
			}
			sameFiles(t, snapshotHooks(t, dir), tt.after)
			res, err = hooks.Install(dir, "/usr/local/bin/hgate")
			if err != nil || res[0].Action != hooks.Unchanged {
				t.Fatalf("second install: %+v, %v; want unchanged", res, err)
			}
			sameFiles(t, snapshotHooks(t, dir), tt.after)
			// Uninstall puts back what was there (a legacy script comes back as nothing:
			// it was hgate's).
			if _, err := hooks.Uninstall(dir); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(tt.name, "ours") {
				sameFiles(t, snapshotHooks(t, dir), before)
			}
		})
	}
}

func TestInstallCreatesFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "custom", "hooks")
	res, err := hooks.Install(dir, "")
	if err != nil || res[0].Action != hooks.Installed {
		t.Fatalf("%+v, %v", res, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pre-commit"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\nhgate=hgate\n") {
		t.Errorf("without a path the hook should call hgate on PATH:\n%s", b)
	}
}

func TestUninstall(t *testing.T) {
	ours := string(hooks.Script("pre-commit", "/usr/local/bin/hgate"))
	tests := []struct {
		name   string
		before map[string]hookFile
		action hooks.Action
		after  map[string]hookFile
	}{
		{"nothing installed", nil, hooks.Absent, map[string]hookFile{}},
		{"ours", map[string]hookFile{"pre-commit": {content: ours}}, hooks.Removed, map[string]hookFile{}},
		{"ours chained", map[string]hookFile{"pre-commit": {content: ours}, "pre-commit.pre-hgate": {content: foreign}}, hooks.Restored,
			map[string]hookFile{"pre-commit": {content: foreign}}},
		{"ours chained to a symlink", map[string]hookFile{"pre-commit": {content: ours}, "pre-commit.pre-hgate": {link: "/etc/lint"}}, hooks.Restored,
			map[string]hookFile{"pre-commit": {link: "/etc/lint"}}},
		{"foreign", map[string]hookFile{"pre-commit": {content: foreign}}, hooks.Foreign,
			map[string]hookFile{"pre-commit": {content: foreign}}},
		{"foreign symlink to our script", map[string]hookFile{"pre-commit": {link: "elsewhere"}}, hooks.Foreign,
			map[string]hookFile{"pre-commit": {link: "elsewhere"}}},
		{"only an old one", map[string]hookFile{"pre-commit.pre-hgate": {content: foreign}}, hooks.Absent,
			map[string]hookFile{"pre-commit.pre-hgate": {content: foreign}}},
		{"ours from before pre-hgate, chained as .old", map[string]hookFile{"pre-commit": {content: legacyOurs}, "pre-commit.old": {content: foreign}}, hooks.Restored,
			map[string]hookFile{"pre-commit": {content: foreign}}},
		{"ours behind lefthook", map[string]hookFile{"pre-commit": {content: lefthookHook}, "pre-commit.old": {content: ours}, "pre-commit.pre-hgate": {content: foreign}}, hooks.Restored,
			map[string]hookFile{"pre-commit": {content: lefthookHook}, "pre-commit.old": {content: foreign}}},
		{"ours behind pre-commit, alone", map[string]hookFile{"pre-commit": {content: precommitHook}, "pre-commit.legacy": {content: ours}}, hooks.Removed,
			map[string]hookFile{"pre-commit": {content: precommitHook}}},
		{"legacy ours behind lefthook is its own .old", map[string]hookFile{"pre-commit": {content: lefthookHook}, "pre-commit.old": {content: legacyOurs}}, hooks.Removed,
			map[string]hookFile{"pre-commit": {content: lefthookHook}}},
		{"a manager's hook alone", map[string]hookFile{"pre-commit": {content: lefthookHook}}, hooks.Absent,
			map[string]hookFile{"pre-commit": {content: lefthookHook}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := setupHooks(t, tt.before)
			res, err := hooks.Uninstall(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 1 || res[0].Action != tt.action {
				t.Fatalf("results = %+v, want %s", res, tt.action)
			}
			sameFiles(t, snapshotHooks(t, dir), tt.after)
			// Idempotent: the second uninstall finds nothing of ours.
			res, err = hooks.Uninstall(dir)
			if err != nil || (res[0].Action != hooks.Absent && res[0].Action != hooks.Foreign) {
				t.Fatalf("second uninstall: %+v, %v", res, err)
			}
			sameFiles(t, snapshotHooks(t, dir), tt.after)
		})
	}
}

func TestInstallUninstallRoundTrip(t *testing.T) {
	dir := setupHooks(t, map[string]hookFile{"pre-commit": {content: foreign}})
	before := snapshotHooks(t, dir)
	for i := 0; i < 2; i++ {
		if _, err := hooks.Install(dir, "/x/hgate"); err != nil {
			t.Fatal(err)
		}
		if _, err := hooks.Uninstall(dir); err != nil {
			t.Fatal(err)
		}
		sameFiles(t, snapshotHooks(t, dir), before)
	}
}

func TestScriptQuotesPath(t *testing.T) {
	s := string(hooks.Script("pre-commit", "/home/o'neil/my bin/hgate"))
	if !strings.Contains(s, `hgate='/home/o'\''neil/my bin/hgate'`+"\n") {
		t.Errorf("path not quoted for sh:\n%s", s)
	}
	if !hooks.IsOurs([]byte(s)) {
		t.Error("IsOurs(Script) = false")
	}
}

// TestScriptIsNotAManagers: neither lefthook (which deletes a hook it thinks is its own,
// keeping no backup) nor the pre-commit framework may mistake hgate's script for theirs.
func TestScriptIsNotAManagers(t *testing.T) {
	for _, path := range []string{"", "/usr/local/bin/hgate", "/home/LEFTHOOK/bin/hgate"} {
		s := hooks.Script("pre-commit", path)
		for _, mark := range []string{"LEFTHOOK", "138fd403232d2ddd5efb44317e38bf03", "File generated by pre-commit"} {
			if strings.Contains(string(s), mark) && !strings.Contains(path, mark) {
				t.Errorf("hgate's script contains %q:\n%s", mark, s)
			}
		}
	}
}
