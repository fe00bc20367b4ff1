package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Names are the hooks hgate installs.
var Names = []string{"pre-commit"}

// Marker is the line that identifies a hook file written by hgate: install
// rewrites such a file in place, uninstall removes only such a file.
const Marker = "# hgate: managed hook"

// Backup is the suffix of the name under which install keeps the hook it found
// (pre-commit.pre-hgate). It is neither lefthook's ".old" nor the pre-commit
// framework's ".legacy", so each tool can keep hgate's hook in its own slot.
const Backup = ".pre-hgate"

// legacyBackup is the suffix hgate used before: hooks installed then still
// name it in their script, and uninstall honours that.
const legacyBackup = ".old"

// Manager is a hook manager that owns a hook file and keeps the hook it
// replaced under a suffix of its own (its slot).
type Manager struct {
	Name     string // as shown to the user: "lefthook", "pre-commit"
	Slot     string // suffix of the kept hook: ".old", ".legacy"
	RunsSlot bool   // the manager's hook runs the kept hook first
	marks    []string
}

// Managers are the hook managers whose hooks install recognises: lefthook
// (2.x; its hook contains "LEFTHOOK", which is also how lefthook knows its
// own, so hgate's script never contains that word) and the pre-commit
// framework (3.x; the ID hashes it writes into its hook, current and prior).
var Managers = []Manager{
	{Name: "lefthook", Slot: ".old", RunsSlot: false, marks: []string{"LEFTHOOK"}},
	{Name: "pre-commit", Slot: ".legacy", RunsSlot: true, marks: []string{
		"138fd403232d2ddd5efb44317e38bf03", "4d9958c90bc262f47553e2c073f14cfe",
		"d8ee923c46731b42cd95cc869add4062", "49fd668cb42069aa1b6048464be5d395",
		"79f09a650522a87b0da915d0d983b2de", "e358c9dae00eac5d06b38dfdb1e33a8c",
	}},
}

// managerOf returns the manager that wrote a hook file, or nil.
func managerOf(content []byte) *Manager {
	for i := range Managers {
		for _, m := range Managers[i].marks {
			if bytes.Contains(content, []byte(m)) {
				return &Managers[i]
			}
		}
	}
	return nil
}

// Action says what Install or Uninstall did to one hook.
type Action string

const (
	Installed Action = "installed" // there was no hook; hgate's is in place
	Chained   Action = "chained"   // a foreign hook was kept as NAME.pre-hgate; hgate's runs it first
	Updated   Action = "updated"   // hgate's hook was there with other content (another hgate path)
	Unchanged Action = "unchanged" // hgate's hook was already there, byte for byte
	Removed   Action = "removed"   // hgate's hook is gone; there was no kept hook
	Restored  Action = "restored"  // hgate's hook is gone and the hook it kept is back in its place
	Absent    Action = "absent"    // uninstall found no hook
	Foreign   Action = "foreign"   // uninstall found a hook that is not hgate's and left it
)

// Result is what happened to one hook.
type Result struct {
	Hook   string `json:"hook"`
	Path   string `json:"path"` // absolute path of hgate's hook file (or where it was)
	Action Action `json:"action"`
	// Manager is the hook manager whose hook git runs as NAME, when hgate's
	// hook sits in that manager's slot (Path is NAME.old or NAME.legacy).
	Manager string `json:"manager,omitempty"`
	// Kept is the file holding the hook hgate's replaced (and runs first), or
	// that uninstall put back; "" when there is none.
	Kept string `json:"kept,omitempty"`
	// Configured: the manager runs hgate anyway (lefthook.yml names
	// "hgate hooks run NAME"); set by NoteLefthook.
	Configured bool `json:"configured,omitempty"`
}

// actionLine is the line Describe prints for a, filled with the hook's name and path; ok is
// false for an action hgate does not name. A switch, not a map: a map literal is built at
// every start of every command, git's pre-commit hook included.
func actionLine(a Action) (line string, ok bool) {
	switch a {
	case Installed, Chained:
		return "installed %s hook: %s", true
	case Updated:
		return "updated %s hook: %s", true
	case Unchanged:
		return "%s hook already installed: %s", true
	case Removed, Restored:
		return "removed %s hook: %s", true
	case Absent:
		return "%s hook not installed: %s", true
	case Foreign:
		return "%s hook is not hgate's, left as it is: %s", true
	}
	return "", false
}

// Describe is the line the CLI prints for r; shown is how to name r.Path.
func (r Result) Describe(shown string) string {
	var notes []string
	if r.Manager != "" && r.Action != Removed && r.Action != Restored {
		for _, m := range Managers {
			if m.Name != r.Manager {
				continue
			}
			switch {
			case m.RunsSlot:
				notes = append(notes, fmt.Sprintf("behind %s's hook, which runs it", m.Name))
			case r.Configured:
				notes = append(notes, fmt.Sprintf("behind %s's hook; lefthook.yml runs hgate hooks run %s", m.Name, r.Hook))
			default:
				notes = append(notes, fmt.Sprintf("behind %s's hook", m.Name))
			}
		}
	}
	verb, ok := actionLine(r.Action)
	if !ok {
		return fmt.Sprintf("%s hook: %s: %s", r.Hook, shown, r.Action)
	}
	switch kept := filepath.Base(r.Kept); r.Action {
	case Chained:
		notes = append(notes, fmt.Sprintf("the existing hook was kept as %s and runs first", kept))
	case Restored:
		notes = append(notes, fmt.Sprintf("the previous hook is back from %s", kept))
	}
	line := fmt.Sprintf(verb, r.Hook, shown)
	if len(notes) > 0 {
		line += " (" + strings.Join(notes, "; ") + ")"
	}
	return line
}

// Script returns the hook file hgate installs as name. It runs
// NAME.pre-hgate (the hook it replaced) first when that is executable (a
// failure there fails the hook, as git would), then "hgate hooks run NAME"
// with the hgate at path, or the one on PATH when path is empty or no longer
// executable (hgate was moved or upgraded to another place). The kept hook is
// found next to the script whatever the script is called, so it still runs
// when a hook manager moves hgate's script to its own slot.
func Script(name, path string) []byte {
	return script(name, path, name+Backup)
}

func script(name, path, backup string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "#!/bin/sh\n%s\n", Marker)
	fmt.Fprintf(&b, "# Written by \"hgate hooks install\"; \"hgate hooks uninstall\" removes it and puts\n")
	fmt.Fprintf(&b, "# back the hook that was here before (kept as %s, which runs first).\n", backup)
	fmt.Fprintf(&b, "old=\"$(dirname \"$0\")/%s\"\n", backup)
	b.WriteString("if [ -x \"$old\" ]; then\n\t\"$old\" \"$@\" || exit $?\nfi\n")
	if path != "" {
		fmt.Fprintf(&b, "hgate=%s\n", shQuote(path))
		b.WriteString("[ -x \"$hgate\" ] || hgate=hgate\n")
	} else {
		b.WriteString("hgate=hgate\n")
	}
	fmt.Fprintf(&b, "exec \"$hgate\" hooks run %s\n", name)
	return b.Bytes()
}

// backupOf returns the name of the kept hook a script of hgate's runs: the
// old= line, NAME.old for scripts from before Backup.
func backupOf(name string, content []byte) string {
	prefix := "old=\"$(dirname \"$0\")/"
	for _, line := range strings.Split(string(content), "\n") {
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			if b, ok := strings.CutSuffix(rest, "\""); ok && b != "" && !strings.ContainsAny(b, "/\"") {
				return b
			}
		}
	}
	return name + legacyBackup
}

// IsOurs reports whether a hook file's content was written by hgate.
func IsOurs(content []byte) bool {
	// The marker is the second line; a foreign script that merely mentions
	// it further down is not ours.
	lines := strings.SplitN(string(content), "\n", 3)
	return len(lines) >= 2 && strings.TrimRight(lines[1], "\r") == Marker
}

// Install puts hgate's hooks into dir (see gitguard.Repo.HooksDir), creating
// dir if needed. hgate is the absolute path of the hgate binary the hooks
// run ("" = hgate on PATH).
//
// A hook already there that is not hgate's is renamed NAME.pre-hgate and
// chained; install refuses when NAME.pre-hgate exists too, rather than lose
// either. When the hook is a hook manager's (Managers), hgate's hook goes
// into that manager's slot instead (NAME.old for lefthook, NAME.legacy for
// the pre-commit framework), where the manager would put it on its own next
// install, and whatever was in the slot is chained as NAME.pre-hgate: so
// either tool can install and uninstall again, in any order, and nothing is
// lost. Running Install again changes nothing.
func Install(dir, hgate string) ([]Result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create hooks folder: %w", err)
	}
	var out []Result
	for _, name := range Names {
		r, err := install(dir, name, hgate)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func install(dir, name, hgate string) (Result, error) {
	res, have, isLink, err := hookSlot(dir, name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return res, err
	}
	target := res.Path
	backup := filepath.Join(dir, name+Backup)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case !isLink && IsOurs(have):
		if err := moveOldBackup(dir, name, have, target); err != nil {
			return res, err
		}
		if _, err := os.Lstat(backup); err == nil {
			res.Kept = backup
		}
		if bytes.Equal(have, Script(name, hgate)) {
			if err := os.Chmod(target, 0o755); err != nil {
				return res, fmt.Errorf("install %s hook: %w", name, err)
			}
			res.Action = Unchanged
			return res, nil
		}
		res.Action = Updated
	default:
		if _, err := os.Lstat(backup); err == nil {
			return res, fmt.Errorf("install %s hook: %s is not hgate's and %s exists too; move one of them away first", name, target, backup)
		}
		if err := os.Rename(target, backup); err != nil {
			return res, fmt.Errorf("install %s hook: keep the existing hook: %w", name, err)
		}
		res.Action = Chained
		res.Kept = backup
	}
	if err := writeExecutable(target, Script(name, hgate)); err != nil {
		return res, fmt.Errorf("install %s hook: %w", name, err)
	}
	return res, nil
}

// hookSlot reads hook name in dir, or, where a hook manager's hook is there and hgate's
// is not, the manager's slot for hgate's (res.Path and res.Manager say which).
func hookSlot(dir, name string) (res Result, have []byte, isLink bool, err error) {
	path := filepath.Join(dir, name)
	res = Result{Hook: name, Path: path, Action: Installed}
	have, isLink, err = readHook(path)
	if err != nil || isLink {
		return res, have, isLink, err
	}
	if m := managerOf(have); m != nil && !IsOurs(have) {
		// hgate's hook lives in the manager's slot.
		res.Manager = m.Name
		res.Path = path + m.Slot
		have, isLink, err = readHook(res.Path)
	}
	return res, have, isLink, err
}

// moveOldBackup moves the hook a script from before Backup kept as NAME.old (have is
// that script) to NAME.pre-hgate, unless NAME.old is target itself (a manager's slot)
// or lefthook's (it is then in its own slot).
func moveOldBackup(dir, name string, have []byte, target string) error {
	backup := filepath.Join(dir, name+Backup)
	old := filepath.Join(dir, backupOf(name, have))
	if old == backup || old == target {
		return nil
	}
	if _, err := os.Lstat(old); err != nil {
		return nil
	}
	if _, err := os.Lstat(backup); err == nil {
		return fmt.Errorf("install %s hook: both %s and %s exist; move one of them away first", name, old, backup)
	}
	if err := os.Rename(old, backup); err != nil {
		return fmt.Errorf("install %s hook: keep the existing hook: %w", name, err)
	}
	return nil
}

// Uninstall removes hgate's hooks from dir (from a hook manager's slot when
// a manager's hook is in front) and puts the hook each kept back in its
// place. A hook that is not hgate's is left alone; running Uninstall again
// changes nothing.
func Uninstall(dir string) ([]Result, error) {
	var out []Result
	for _, name := range Names {
		r, err := uninstall(dir, name)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func uninstall(dir, name string) (Result, error) {
	path := filepath.Join(dir, name)
	res := Result{Hook: name, Path: path, Action: Removed}
	have, isLink, err := readHook(path)
	if err == nil && !isLink && !IsOurs(have) {
		if m := managerOf(have); m != nil {
			res.Manager = m.Name
			res.Path = path + m.Slot
			have, isLink, err = readHook(res.Path)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Action = Absent
		return res, nil
	case err != nil:
		return res, err
	case isLink || !IsOurs(have):
		res.Action = Foreign
		return res, nil
	}
	if old := filepath.Join(dir, backupOf(name, have)); old != res.Path {
		if _, err := os.Lstat(old); err == nil {
			// Rename over our hook: there is no moment without a hook.
			if err := os.Rename(old, res.Path); err != nil {
				return res, fmt.Errorf("uninstall %s hook: restore %s: %w", name, old, err)
			}
			res.Action = Restored
			res.Kept = old
			return res, nil
		}
	}
	if err := os.Remove(res.Path); err != nil {
		return res, fmt.Errorf("uninstall %s hook: %w", name, err)
	}
	return res, nil
}

// LefthookConfigs are the files lefthook 2.x reads its configuration from,
// relative to the repository root. A function, not a table built at package
// initialisation: every start of hgate would pay its 40 strings.
func LefthookConfigs() []string {
	var out []string
	for _, dir := range []string{"", ".config/"} {
		for _, base := range []string{"lefthook", ".lefthook", "lefthook-local", ".lefthook-local"} {
			for _, ext := range []string{".yml", ".yaml", ".json", ".jsonc", ".toml"} {
				out = append(out, dir+base+ext)
			}
		}
	}
	return out
}

// LefthookRunsHgate reports whether one of lefthook's configuration files in
// root mentions "hgate hooks run NAME": lefthook does not run the hook it
// keeps as NAME.old, so that is the only way hgate's check runs under it.
func LefthookRunsHgate(root, name string) bool {
	for _, f := range LefthookConfigs() {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err == nil && bytes.Contains(b, []byte("hgate hooks run "+name)) {
			return true
		}
	}
	return false
}

// NoteLefthook sets Configured on the results whose hook is in lefthook's slot, from the
// lefthook configuration files in root (LefthookRunsHgate).
func NoteLefthook(root string, res []Result) {
	for i, r := range res {
		if r.Manager == "lefthook" && r.Action != Removed && r.Action != Restored {
			res[i].Configured = LefthookRunsHgate(root, r.Hook)
		}
	}
}

// Unchecked reports whether r leaves hgate's hook in lefthook's slot with nothing running
// it: lefthook runs its own hook, and lefthook.yml does not run hgate (see NoteLefthook).
func (r Result) Unchecked() bool {
	return r.Manager == "lefthook" && !r.Configured && r.Action != Removed && r.Action != Restored && r.Action != Foreign
}

// readHook reads a hook file; a symlink (a hook manager's link, say) is
// never hgate's, whatever it points at.
func readHook(path string) (content []byte, isLink bool, err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, false, err
		}
		return nil, false, fmt.Errorf("read hook %s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return nil, true, nil
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("read hook %s: not a regular file", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("read hook %s: %w", path, err)
	}
	return b, false, nil
}

// writeExecutable replaces path atomically with an executable file, so git
// never runs a half-written hook.
func writeExecutable(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o755)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// shQuote quotes s for sh.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
