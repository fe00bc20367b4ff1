// Package gitrun starts every git process hgate runs, and only it does (internal/layers
// fails on a git started anywhere else). git obeys its environment, the system and global
// config, the repository's config and attribute files; hgate runs it unattended next to
// an agent that may have planted any of them, so each process gets:
//
//   - an environment built from nothing: PATH, LANG=C, no HOME (so no ~/.gitconfig and no
//     XDG config or attributes), GIT_CONFIG_NOSYSTEM and GIT_CONFIG_GLOBAL=/dev/null,
//     GIT_ATTR_NOSYSTEM, no replace objects; GIT_DIR, GIT_CONFIG_*, GIT_EXEC_PATH and the
//     rest of hgate's own environment never reach it;
//   - the repository named on its command line (--git-dir, --work-tree), never discovered;
//   - -c settings that turn off hooks, fsmonitor, the untracked cache, the attributes and
//     excludes files, credential helpers, ssh and every transport, the pager and auto gc.
//
// git itself is pinned when found (proc.Pin): a git changed while hgate runs, through a
// hard link or a bind mount the loop's PATH check cannot see, is never started.
//
// git 2.39 cannot skip the repository's own config or $GIT_DIR/info/attributes, and a
// filter, textconv or merge driver has a name -c cannot enumerate. So the config is read
// by git's own parser (git config --file --list: no second parser an attacker could steer
// apart from git's) and checked against an allowlist of keys that neither run a command
// nor change content; info/attributes may not name a driver or a conversion. Both files'
// digests are anchored when the Runner is made: a change before any later git process
// stops it, naming what changed. Attributes in the repository's trees are then inert: a
// driver they name is defined nowhere git looks.
package gitrun

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hgate/hgate/internal/proc"
)

// ErrNoGit is returned by New when no git command is on PATH.
var ErrNoGit = errors.New("no git command on PATH")

// Runner runs git on one repository.
type Runner struct {
	git      proc.Pin // git, found on PATH once and pinned: checked before each start
	gitDir   string
	workTree string
	changed  string // where a git that changed while hgate ran is recorded (changedName)
	config   string // the common directory's config
	attrs    string // the common directory's info/attributes

	mu     sync.Mutex
	anchor map[string][sha256.Size]byte // file → digest when anchored (zero: absent)
	keys   []Entry                      // the config's entries when anchored
}

// New checks the repository's config and info/attributes and anchors their digests.
// gitDir is the worktree's git directory, commonDir the shared one (the same for the
// main worktree), workTree its root.
func New(gitDir, commonDir, workTree string) (*Runner, error) {
	path, err := lookGit(workTree, commonDir)
	if err != nil {
		return nil, err
	}
	git, err := proc.PinProgram(path)
	if err != nil {
		return nil, err
	}
	r := &Runner{git: git, gitDir: gitDir, workTree: workTree, changed: filepath.Join(commonDir, "hgate", changedName),
		config: filepath.Join(commonDir, "config"), attrs: filepath.Join(commonDir, "info", "attributes")}
	if err := r.refuseChanged(); err != nil {
		return nil, err
	}
	if err := r.Anchor(); err != nil {
		return nil, err
	}
	return r, nil
}

// lookGit finds git on PATH as exec.LookPath does, skipping relative entries and those
// inside the repository (its worktree or common directory): an allowed folder there is
// the agent's to write, and the git found runs as the user, outside every sandbox. (The
// loop keeps PATH's other folders out of the agent's write set.)
func lookGit(workTree, commonDir string) (string, error) {
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		dir = filepath.Clean(dir)
		if !filepath.IsAbs(dir) || inside(dir, workTree) || inside(dir, commonDir) {
			continue
		}
		if p, err := exec.LookPath(filepath.Join(dir, "git")); err == nil {
			return p, nil
		}
	}
	return "", ErrNoGit
}

// changedName is the file in .git/hgate/ that lists each git that changed while hgate
// ran, as it then was: a later hgate (the next run, a --resume) finds the same git and
// must not run it either. A git reinstalled since is another file, and runs.
const changedName = "changed-programs"

// recordChanged adds git as it is now to the record. Best effort: the error that stops
// this hgate says the same.
func (r *Runner) recordChanged() {
	id, err := proc.Identity(r.git.Path())
	if err != nil {
		return
	}
	os.MkdirAll(filepath.Dir(r.changed), 0o755)
	f, err := os.OpenFile(r.changed, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s\t%s\n", r.git.Path(), id)
	f.Close()
}

// refuseChanged refuses the git found when the record holds it as it is.
func (r *Runner) refuseChanged() error {
	data, err := readBounded(r.changed)
	if err != nil {
		return nil // none recorded (or unreadable: the pin still guards this run)
	}
	if !slices.Contains(strings.Split(string(data), "\n"), r.git.Path()+"\t"+r.git.ID()) {
		return nil
	}
	return &ProgramChangedError{fmt.Errorf("%s changed while an earlier hgate ran (recorded in %s) and is still that changed file: hgate does not run it. "+
		"A sandboxed process may have rewritten it through another name of its file (a hard link, a bind mount of its folder): "+
		"check it and reinstall it, or remove %s if the change was yours", r.git.Path(), r.changed, r.changed)}
}

// inside reports whether p is dir or below it.
func inside(p, dir string) bool {
	dir = filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, dir+string(filepath.Separator))
}

// Anchor checks the config and info/attributes now and takes their digests as the state
// every later git process expects.
func (r *Runner) Anchor() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sums, err := r.digests()
	if err != nil {
		return err
	}
	keys, err := r.checkFiles()
	if err != nil {
		return err
	}
	r.anchor, r.keys = sums, keys
	return nil
}

// Check returns an error naming what changed in the config or info/attributes since
// they were anchored, or a key or attribute that may not be there, or git itself when it
// is no longer the file pinned (recorded for later hgates: a ProgramChangedError).
func (r *Runner) Check() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkGit(); err != nil {
		return err
	}
	return r.checkLocked()
}

// checkGit checks the pin of git, recording a change.
func (r *Runner) checkGit() error {
	if err := r.git.Check(); err != nil {
		r.recordChanged()
		return &ProgramChangedError{err}
	}
	return nil
}

// ProgramChangedError says that git is not the file hgate pinned when it found it, in
// this hgate or (recorded) an earlier one.
type ProgramChangedError struct{ Err error }

func (e *ProgramChangedError) Error() string { return e.Err.Error() }
func (e *ProgramChangedError) Unwrap() error { return e.Err }

func (r *Runner) checkLocked() error {
	sums, err := r.digests()
	if err != nil {
		return err
	}
	var changed []string
	for _, f := range []string{r.config, r.attrs} {
		if sums[f] != r.anchor[f] {
			changed = append(changed, f)
		}
	}
	if len(changed) == 0 {
		return nil
	}
	what := ""
	if keys, err := r.listConfig(); err != nil {
		what = err.Error()
	} else {
		what = diffEntries(r.keys, keys)
	}
	if data, err := readBounded(r.attrs); err == nil {
		if err := refuseAttributes(r.attrs, data); err != nil {
			what = strings.TrimPrefix(strings.Join([]string{what, err.Error()}, "; "), "; ")
		}
	}
	return &ChangedError{Files: changed, What: what}
}

// ChangedError says that a file git reads changed while hgate ran.
type ChangedError struct {
	Files []string
	What  string // the change, or the key it added that is not allowed
}

func (e *ChangedError) Error() string {
	s := fmt.Sprintf("%s changed while hgate ran", strings.Join(e.Files, " and "))
	if e.What != "" {
		s += ": " + e.What
	}
	return s + "; git reads it and hgate's own git would obey it: hgate stopped instead. Put it back (or make sure the change is yours and allowed) and run again"
}

// digests reads each file's SHA-256; an absent file's is zero.
func (r *Runner) digests() (map[string][sha256.Size]byte, error) {
	out := map[string][sha256.Size]byte{}
	for _, f := range []string{r.config, r.attrs} {
		data, err := readBounded(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[f] = sha256.Sum256(data)
	}
	return out, nil
}

// maxFile bounds what is read of a config or attributes file: neither is ever this big.
const maxFile = 1 << 20

func readBounded(f string) ([]byte, error) {
	fi, err := os.Lstat(f)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxFile {
		return nil, fmt.Errorf("%s: not a regular file of at most %d bytes", f, maxFile)
	}
	return os.ReadFile(f)
}

// checkFiles lists the config's keys (by git's own parser) and refuses one outside the
// allowlist, or a driver or conversion in info/attributes.
func (r *Runner) checkFiles() ([]Entry, error) {
	keys, err := r.listConfig()
	if err != nil {
		return nil, err
	}
	if err := refuseKeys(r.config, keys); err != nil {
		return nil, err
	}
	if data, err := readBounded(r.attrs); err == nil {
		if err := refuseAttributes(r.attrs, data); err != nil {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return keys, nil
}

// listConfig runs git config --file on the config alone (no includes, no repository:
// it runs in /), and returns its entries.
func (r *Runner) listConfig() ([]Entry, error) {
	if _, err := os.Lstat(r.config); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	out, _, err := r.start("/", []string{"config", "--file", r.config, "--no-includes", "--null", "--list"})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.config, err)
	}
	data, _ := readBounded(r.config)
	return parseList(out, data), nil
}

// Run runs git in the worktree with args, after checking that the config and
// info/attributes are as anchored, and returns its trimmed stdout; a non-zero exit is an
// error carrying its stderr, and its exit code.
func (r *Runner) Run(args ...string) (string, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.checkLocked(); err != nil {
		return "", 0, err
	}
	full := append([]string{"--git-dir=" + r.gitDir, "--work-tree=" + r.workTree}, args...)
	out, code, err := r.start(r.workTree, full)
	return strings.TrimSpace(out), code, err
}

// settings turn off, for every git hgate starts, everything a config can make git run or
// change that -c can name. Drivers (filter.*, diff.*, merge.*) cannot be named: the
// allowlist keeps them out of the repository's config, and no other config is read.
var settings = []string{
	"core.hooksPath=/dev/null", "core.fsmonitor=false", "core.untrackedCache=false",
	"core.attributesFile=/dev/null", "core.excludesFile=/dev/null",
	"core.sshCommand=false", "core.askPass=", "credential.helper=", "protocol.allow=never",
	"core.pager=cat", "gc.auto=0", "maintenance.auto=false", "submodule.recurse=false",
	"merge.renormalize=false", "core.autocrlf=false", "core.safecrlf=false",
}

// environ is git's whole environment.
func environ() []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "LANG=C", "LC_ALL=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_NO_REPLACE_OBJECTS=1", "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0",
		"GIT_PAGER=cat", "PAGER=cat",
	}
}

// start is the one place a git process starts: git itself must be the file it was when
// found (a program changed through another name of its file would run as the user).
func (r *Runner) start(dir string, args []string) (string, int, error) {
	if err := r.checkGit(); err != nil {
		return "", 0, err
	}
	argv := make([]string, 0, 2*len(settings)+len(args))
	for _, s := range settings {
		argv = append(argv, "-c", s)
	}
	argv = append(argv, args...)
	cmd := exec.Command(r.git.Path(), argv...)
	cmd.Dir, cmd.Env = dir, environ()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if err != nil {
		return out.String(), code, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), 0, nil
}
