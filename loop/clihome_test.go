package loop

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/config"
)

const (
	oldLogin = `{"claudeAiOauth":{"accessToken":"old","refreshToken":"r1","expiresAt":1}}`
	newLogin = `{"claudeAiOauth":{"accessToken":"new","refreshToken":"r2","expiresAt":2}}`
)

// homeRunner is a sandboxed claude run in a temporary run folder, its HOME holding a
// claude login, settings and instructions.
func homeRunner(t *testing.T) (*runner, *bytes.Buffer, string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	writeT(t, filepath.Join(home, ".claude", ".credentials.json"), oldLogin)
	writeT(t, filepath.Join(home, ".claude", "settings.json"), `{"model":"x"}`)
	writeT(t, filepath.Join(home, ".claude", "CLAUDE.md"), "be brief\n")
	var log bytes.Buffer
	r := &runner{dir: t.TempDir(), log: &log, cfg: config.Loop{Agent: []string{"claude"}}, j: &journal{}}
	r.j.Sandbox = "landlock ABI 7"
	return r, &log, filepath.Join(home, ".claude", ".credentials.json")
}

func writeT(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readT(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestCLIHome: the private home is made once, from the user's files, read never written:
// the login and settings copied, .claude.json started as {}, CLAUDE.md linked; agent 2
// gets a home of its own; without the sandbox there is none.
func TestCLIHome(t *testing.T) {
	r, _, user := homeRunner(t)
	home, err := r.cliHome(0)
	if err != nil {
		t.Fatal(err)
	}
	if home != filepath.Join(r.dir, "cli-home", "1") {
		t.Fatalf("home %s", home)
	}
	if readT(t, filepath.Join(home, ".credentials.json")) != oldLogin || readT(t, filepath.Join(home, "settings.json")) != `{"model":"x"}` ||
		readT(t, filepath.Join(home, ".claude.json")) != "{}\n" {
		t.Fatalf("the home's files are not the user's")
	}
	if l, err := os.Readlink(filepath.Join(home, "CLAUDE.md")); err != nil || l != filepath.Join(filepath.Dir(user), "CLAUDE.md") {
		t.Fatalf("CLAUDE.md: %q %v", l, err)
	}
	writeT(t, filepath.Join(home, "settings.json"), `{"hooks":{}}`) // the agent's
	if _, err := r.cliHome(1); err != nil {
		t.Fatal(err)
	}
	if readT(t, filepath.Join(home, "settings.json")) != `{"hooks":{}}` || readT(t, filepath.Join(filepath.Dir(user), "settings.json")) != `{"model":"x"}` {
		t.Fatalf("a made home was made again, or the user's settings changed")
	}
	// A resumed run (a new runner on the same run folder) finds the home as it was.
	resumed := &runner{dir: r.dir, log: r.log, cfg: r.cfg, j: r.j}
	if h, err := resumed.cliHome(1); err != nil || h != home || readT(t, filepath.Join(home, "settings.json")) != `{"hooks":{}}` {
		t.Fatalf("the resumed run's home %s %v", h, err)
	}
	if h2, err := r.cliHome(2); err != nil || h2 == home || readT(t, filepath.Join(h2, "settings.json")) != `{"model":"x"}` {
		t.Fatalf("agent 2's home %s %v", h2, err)
	}
	r.j.Sandbox = SandboxOff
	if h, err := r.cliHome(3); h != "" || err != nil {
		t.Fatalf("an unsandboxed run got a home: %q %v", h, err)
	}
}

// TestSyncLogin: a refreshed login goes back to the user's file (0600) only when it is a
// claude login and the user's file is what hgate copied in; otherwise a line says why and
// the private home gets the user's login again.
func TestSyncLogin(t *testing.T) {
	r, log, user := homeRunner(t)
	home, err := r.cliHome(0)
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(home, ".credentials.json")
	sync := func() {
		t.Helper()
		log.Reset()
		if _, err := r.cliHome(0); err != nil {
			t.Fatal(err)
		}
	}

	writeT(t, priv, newLogin)
	sync()
	if got := readT(t, user); !strings.Contains(got, `"accessToken": "new"`) || !strings.Contains(log.String(), "refreshed its login: written back") {
		t.Fatalf("a refresh was not carried back: %s\n%s", got, log)
	}
	if fi, _ := os.Stat(user); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the user's login is %v", fi.Mode())
	}
	carried := readT(t, user)

	for _, tc := range []struct{ name, priv, why string }{
		{"a hook", `{"claudeAiOauth":{"accessToken":"a","refreshToken":"b","expiresAt":3},"hooks":{}}`, `unknown field "hooks"`},
		{"junk", "junk", "is not a claude login"},
		{"a type", `{"claudeAiOauth":{"accessToken":"a","refreshToken":"b","expiresAt":"3"}}`, "cannot unmarshal string"},
	} {
		writeT(t, priv, tc.priv)
		sync()
		if readT(t, user) != carried || !strings.Contains(log.String(), tc.why) || !strings.Contains(log.String(), "is left as it is") {
			t.Fatalf("%s: the user's login %q\n%s", tc.name, readT(t, user), log)
		}
		if readT(t, priv) != carried {
			t.Fatalf("%s: the private login was not put back: %q", tc.name, readT(t, priv))
		}
	}

	// The user logged in again while the CLI refreshed its copy: the user's is kept.
	writeT(t, user, oldLogin)
	writeT(t, priv, newLogin)
	sync()
	if readT(t, user) != oldLogin || !strings.Contains(log.String(), "yours changed during the run") || readT(t, priv) != oldLogin {
		t.Fatalf("the user's new login was not kept: %q, private %q\n%s", readT(t, user), readT(t, priv), log)
	}

	// A link in the private home is never followed, and is replaced by the user's login.
	if err := os.Remove(priv); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(user, priv); err != nil {
		t.Fatal(err)
	}
	sync()
	if fi, err := os.Lstat(priv); err != nil || !fi.Mode().IsRegular() || readT(t, user) != oldLogin {
		t.Fatalf("the link stayed, or the user's file changed: %v %v", fi, err)
	}

	// A folder at the name: removed, the user's login put back.
	if err := os.Remove(priv); err != nil {
		t.Fatal(err)
	}
	writeT(t, filepath.Join(priv, "x"), "x")
	sync()
	if readT(t, priv) != oldLogin || !strings.Contains(log.String(), "is left as it is") {
		t.Fatalf("the folder at the login's name stayed\n%s", log)
	}

	// A user without a login never gets one from the run.
	if err := os.Remove(user); err != nil {
		t.Fatal(err)
	}
	sync()
	writeT(t, priv, newLogin)
	sync()
	if _, err := os.Lstat(user); err == nil || !strings.Contains(log.String(), "you had none") {
		t.Fatalf("a login was added to the user's home\n%s", log)
	}
}

// TestCLIHomeLinks: a user's CLI folder that is a link (a dotfiles checkout) is read
// through; a file of it that is a link is neither copied nor written over, and a line
// says so.
func TestCLIHomeLinks(t *testing.T) {
	r, log, user := homeRunner(t)
	dots := filepath.Join(t.TempDir(), "dots")
	if err := os.Rename(filepath.Dir(user), dots); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dots, filepath.Dir(user)); err != nil {
		t.Fatal(err)
	}
	home, err := r.cliHome(0)
	if err != nil {
		t.Fatal(err)
	}
	if readT(t, filepath.Join(home, ".credentials.json")) != oldLogin || readT(t, filepath.Join(home, "settings.json")) != `{"model":"x"}` {
		t.Fatalf("the linked folder's files were not copied\n%s", log)
	}

	writeT(t, filepath.Join(dots, "real-settings.json"), `{"model":"y"}`)
	writeT(t, filepath.Join(dots, "real-login.json"), oldLogin)
	for _, n := range []string{"settings.json", ".credentials.json"} {
		if err := os.Remove(filepath.Join(dots, n)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("real-settings.json", filepath.Join(dots, "settings.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real-login.json", filepath.Join(dots, ".credentials.json")); err != nil {
		t.Fatal(err)
	}
	log.Reset()
	home2, err := r.cliHome(2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(home2, "settings.json")); err == nil || !strings.Contains(log.String(), "not copied into the agent's own home") {
		t.Fatalf("a linked settings.json was copied\n%s", log)
	}
	if _, err := os.Lstat(filepath.Join(home2, ".credentials.json")); err == nil || !strings.Contains(log.String(), "runs without your login") {
		t.Fatalf("a linked login was copied\n%s", log)
	}
	writeT(t, filepath.Join(home2, ".credentials.json"), newLogin)
	if _, err := r.cliHome(2); err != nil {
		t.Fatal(err)
	}
	if readT(t, filepath.Join(dots, "real-login.json")) != oldLogin {
		t.Fatalf("a login was written through the user's link")
	}
}

// TestDropLogins: when the run stops, a refreshed login goes back to the user and no copy
// of the login stays in the run's folder; a resumed run copies it in again, quietly.
func TestDropLogins(t *testing.T) {
	r, log, user := homeRunner(t)
	home, err := r.cliHome(0)
	if err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(home, ".credentials.json")
	writeT(t, priv, newLogin) // the CLI refreshed it during the last phase
	r.dropLogins()
	if _, err := os.Lstat(priv); !os.IsNotExist(err) {
		t.Fatalf("the run's folder keeps a copy of the login: %v", err)
	}
	if got := readT(t, user); !strings.Contains(got, `"accessToken": "new"`) {
		t.Fatalf("the refresh was not carried back before the copy went: %s\n%s", got, log)
	}
	log.Reset()
	if _, err := r.cliHome(0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readT(t, priv), `"accessToken": "new"`) || log.Len() != 0 {
		t.Fatalf("the resumed run's login %q, log %q", readT(t, priv), log)
	}
}
