package loop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/internal/fsafe"
)

// cliHomeName is the run folder's folder of its agents' private CLI homes: cli-home/<k>
// for agent k (1 for the single agent). A sandboxed agent's CLI keeps its settings,
// login and sessions there, never in the user's own home, where a hook or an
// instruction it planted would run in the user's next session of that CLI, outside
// every sandbox.
const cliHomeName = "cli-home"

// Bounds of what hgate reads of the user's CLI files.
const (
	loginMax = 1 << 20
	copyMax  = 64 << 20 // ~/.claude.json keeps every project's history
)

// cliHome makes, or finds again (a resumed run), agent k's private home of the run's
// CLI and brings its login up to date (syncLogin). It returns "" when the CLI keeps no
// home hgate moves or the agent runs without hgate's sandbox (then it runs as the user,
// in the user's home).
func (r *runner) cliHome(k int) (string, error) {
	cli := r.cli()
	h := cli.Home()
	if h.Var == "" || r.j.Sandbox == SandboxOff {
		return "", nil
	}
	rel := cliHomeName + "/" + strconv.Itoa(max(k, 1))
	run, err := fsafe.OpenRoot(r.dir)
	if err != nil {
		return "", err
	}
	defer run.Close()
	if err := run.MkdirAll(rel, 0o700); err != nil {
		return "", fmt.Errorf("loop: the agent's %s home: %w", cli.Name(), err)
	}
	home, err := run.OpenDirOwned(rel) // the agent may have taken its rights away
	if err != nil {
		return "", err
	}
	defer home.Close()
	if _, built := r.loginRecord(k); !built {
		if err := r.fillHome(h, home); err != nil {
			return "", fmt.Errorf("loop: the agent's %s home: %w", cli.Name(), err)
		}
	}
	if err := r.syncLogin(cli, h, home, k); err != nil {
		return "", fmt.Errorf("loop: the agent's %s login: %w", cli.Name(), err)
	}
	return home.Path(), nil
}

// fillHome puts in a new private home what the CLI needs of the user's: the settings
// copied (so that the agent's changes stay in the run), the instructions, skills,
// agents and commands linked (the sandbox grants the private home, not what a link in
// it names, so the agent reads them and cannot change them; and they stay the user's
// current ones). The login is syncLogin's.
func (r *runner) fillHome(h agentcli.Home, home *fsafe.Root) error {
	for _, d := range h.Dirs {
		if err := home.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	for _, c := range h.Copy {
		data, err := readUserFile(c.From, copyMax)
		if fsafe.Refused(err) {
			fmt.Fprintf(r.log, "[loop] %s: %v: not copied into the agent's own home\n", c.From, err)
			continue
		}
		if err != nil {
			return err
		}
		if data == nil && c.Start == "" {
			continue
		}
		if data == nil {
			data = []byte(c.Start)
		}
		if err := home.Replace(c.Name, bytes.NewReader(data), 0o600); err != nil {
			return err
		}
	}
	for _, l := range h.Link {
		if _, err := os.Lstat(l.From); err != nil {
			continue // the user has none
		}
		if err := home.Symlink(l.From, l.Name); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// syncLogin keeps agent k's login and the user's one login. The record (in the run's
// private folder, which no agent can read or write) holds the digest of what hgate last
// copied between them. When the private login changed (the CLI refreshed it, or the
// agent wrote it), it goes back to the user's file only if it has the CLI's credentials
// shape (CLI.Login) and the user's file is still what hgate copied in (else the user
// logged in again meanwhile and keeps that login); a refused one is said on the log. Then
// the user's login, when the private one is not it, is copied in again. It runs before
// and after each of the agent's phases, never while a process of the agent's may write.
func (r *runner) syncLogin(cli agentcli.CLI, h agentcli.Home, home *fsafe.Root, k int) error {
	if h.Login == "" {
		return nil
	}
	r.homeMu.Lock()
	defer r.homeMu.Unlock()
	userPath := filepath.Join(h.From, h.Login)
	user, err := r.userLogin(cli, userPath)
	if err != nil {
		return err
	}
	rec, built := r.loginRecord(k)
	priv, bad, err := privateLogin(home, h.Login)
	if err != nil {
		return err
	}
	if built && (bad != nil || digest(priv) != rec) {
		if user, err = r.carryBack(cli, userPath, user, priv, bad, rec); err != nil {
			return err
		}
	}
	sum := digest(user)
	if built && bad == nil && sum == rec && digest(priv) == rec {
		return nil
	}
	if err := putLogin(home, h.Login, user, bad != nil); err != nil {
		return err
	}
	return r.writeLoginRecord(k, sum)
}

// userLogin is the user's login file at userPath (nil: none). A link or anything but a
// regular file is none to hgate, which neither copies nor writes over it: said on the log.
func (r *runner) userLogin(cli agentcli.CLI, userPath string) ([]byte, error) {
	user, err := readUserFile(userPath, loginMax)
	if fsafe.Refused(err) {
		fmt.Fprintf(r.log, "[loop] %s: %v: the agent's %s runs without your login\n", userPath, err, cli.Name())
		return nil, nil
	}
	return user, err
}

// privateLogin is the login in the private home (nil: none); bad says why what is at
// its name is no file hgate reads (a folder or a link the agent left there, or a file
// whose rights it took away).
func privateLogin(home *fsafe.Root, name string) (priv []byte, bad, err error) {
	priv, err = home.ReadFile(name, loginMax)
	switch {
	case err == nil:
		return priv, nil, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, nil
	case fsafe.Refused(err), errors.Is(err, fs.ErrPermission):
		return nil, err, nil
	}
	return nil, nil, err
}

// putLogin makes the private home's login the user's (nil: none), first removing a folder
// or a link the agent left at its name (bad).
func putLogin(home *fsafe.Root, name string, user []byte, bad bool) error {
	if bad {
		if err := home.RemoveAll(name); err != nil {
			return err
		}
	}
	if user == nil {
		if err := home.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return home.Replace(name, bytes.NewReader(user), 0o600)
}

// carryBack decides what becomes of a private login priv that is no longer what hgate
// copied in (rec; readErr: it could not be read as a file): written over the user's
// file at userPath (holding user) when syncLogin's rule allows, else said on the log. It
// returns the user's login as it then is.
func (r *runner) carryBack(cli agentcli.CLI, userPath string, user, priv []byte, readErr error, rec string) ([]byte, error) {
	why := ""
	var login []byte
	switch {
	case readErr != nil:
		why = readErr.Error()
	case priv == nil:
		why = "it was removed"
	case rec == "":
		why = "you had none: hgate never adds a login"
	default:
		var err error
		if login, err = cli.Login(priv); err != nil {
			why = "it is not a " + cli.Name() + " login (" + err.Error() + ")"
		} else if digest(user) != rec {
			why = "yours changed during the run (logged in again?): yours is kept"
		}
	}
	if why != "" {
		fmt.Fprintf(r.log, "[loop] the agent's %s login changed: %s; %s is left as it is\n", cli.Name(), why, userPath)
		return user, nil
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(userPath))
	if err != nil {
		return nil, err
	}
	dir, err := fsafe.OpenRoot(parent)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	if err := dir.Replace(filepath.Base(userPath), bytes.NewReader(login), 0o600); err != nil {
		return nil, err
	}
	fmt.Fprintf(r.log, "[loop] the agent's %s refreshed its login: written back to %s\n", cli.Name(), userPath)
	return login, nil
}

// readUserFile reads one of the user's CLI files through fsafe (by descriptor, the file
// itself no link, bounded): nil when it is missing. Its folder may be a link (a dotfiles
// checkout): no sandbox can write the user's home.
func readUserFile(p string, bound int64) ([]byte, error) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, err := fsafe.ReadFile(dir, filepath.Base(p), bound)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil && data == nil {
		data = []byte{} // an empty file is there
	}
	return data, err
}

// digest names a login's bytes in the record: "" for none.
func digest(data []byte) string {
	if data == nil {
		return ""
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// loginRecordName is agent k's record in the run's private folder.
func loginRecordName(k int) string { return "cli-home-" + strconv.Itoa(max(k, 1)) + ".login" }

// loginRecord is agent k's record: the digest of the login hgate last copied, and
// whether its home was made (a record exists).
func (r *runner) loginRecord(k int) (string, bool) {
	data, err := fsafe.ReadFile(privateDir(r.dir), loginRecordName(k), 256)
	if err != nil {
		return "", false
	}
	return string(bytes.TrimSpace(data)), true
}

func (r *runner) writeLoginRecord(k int, sum string) error {
	run, err := fsafe.OpenRoot(r.dir)
	if err != nil {
		return err
	}
	defer run.Close()
	if err := run.MkdirAll(privateDirName, 0o700); err != nil {
		return err
	}
	return run.Replace(privateDirName+"/"+loginRecordName(k), bytes.NewReader([]byte(sum+"\n")), 0o600)
}

// dropLogins takes the user's login out of every agent's private home when the run
// stops, after carrying a refreshed one back (no process of the agent's is left): the
// run's folder is kept, and may be shared or archived, and should not hold a copy of
// the user's login. `hgate loop --resume` copies it in again. A killed run leaves it.
func (r *runner) dropLogins() {
	cli := r.cli()
	h := cli.Home()
	if h.Login == "" || r.j.Sandbox == SandboxOff {
		return
	}
	for k := 1; k <= max(r.cfg.Agents, 1); k++ {
		if _, built := r.loginRecord(k); !built {
			continue
		}
		if err := r.dropLogin(cli, h, k); err != nil {
			fmt.Fprintf(r.log, "[loop] the agent's %s login in %s/%d: %v\n", cli.Name(), cliHomeName, k, err)
		}
	}
}

func (r *runner) dropLogin(cli agentcli.CLI, h agentcli.Home, k int) error {
	run, err := fsafe.OpenRoot(r.dir)
	if err != nil {
		return err
	}
	defer run.Close()
	home, err := run.OpenDirOwned(cliHomeName + "/" + strconv.Itoa(k))
	if err != nil {
		return err
	}
	defer home.Close()
	if err := r.syncLogin(cli, h, home, k); err != nil {
		return err
	}
	if err := home.RemoveAll(h.Login); err != nil {
		return err
	}
	return r.writeLoginRecord(k, "")
}
