package loop

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/scratch"
)

// presetWritable are the folders (ending in /) and files each preset's tool keeps its
// own settings, sessions and logs in, as Claude Code 2.1.197 and 2.1.330 and codex-cli
// 0.169.0 write them: inside the sandbox the home folder is read-only, so a folder missing
// there is created first (codex cannot start without ~/.codex, claude cannot keep a
// session without ~/.claude), and claude's ~/.claude.json starts as an empty object
// (an empty file claude reports as corrupted). CLAUDE_CONFIG_DIR and CODEX_HOME move
// them, as they move them for the tools.
func presetWritable(preset string) []string {
	switch preset {
	case "claude":
		if dir := os.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
			return []string{dir + "/", filepath.Join(dir, ".claude.json"), "~/.cache/claude-cli-nodejs/"}
		}
		return []string{"~/.claude/", "~/.claude.json", "~/.cache/claude-cli-nodejs/"}
	case "codex":
		if dir := os.Getenv("CODEX_HOME"); dir != "" {
			return []string{dir + "/"}
		}
		return []string{"~/.codex/"}
	case "aider":
		return []string{"~/.aider/"}
	}
	return nil
}

// presetFileStart is what a preset's file missing from the home folder starts as.
func presetFileStart(p string) (content string, ok bool) {
	if filepath.Base(p) == ".claude.json" {
		return "{}\n", true
	}
	return "", false
}

// presetEnv is the environment a preset's tool gets besides hgate's. Claude Code refuses
// --dangerously-skip-permissions as root unless IS_SANDBOX is exactly "1" (its root
// guard's escape, as 2.1.197 and 2.1.330 check it): set only when the agent really runs
// in hgate's sandbox, and over any other value the caller's environment gives it
// (IS_SANDBOX=yes would not do). aider keeps its chat and input history in the
// repository root by default, where the agent may not write (and Step 0 would see
// them): they go to the private TMPDIR instead, and the chat history is kept in the
// iteration's folder.
func presetEnv(preset string, sandboxed bool, tmp string) []string {
	switch preset {
	case "claude":
		if sandboxed && os.Getenv("IS_SANDBOX") != "1" {
			return []string{"IS_SANDBOX=1"}
		}
	case "aider":
		return []string{
			"AIDER_CHAT_HISTORY_FILE=" + filepath.Join(tmp, transcriptName),
			"AIDER_INPUT_HISTORY_FILE=" + filepath.Join(tmp, "aider.input.history"),
		}
	}
	return nil
}

// transcriptName is the agent's own transcript, kept in the iteration's folder when the
// agent wrote one to its TMPDIR.
const transcriptName = "aider.chat.history.md"

// agentWritable lists what the agent's process tree may write in the worktree: the
// places where an allow pattern can match, never .git, the workspace or another
// protected path. The sandbox grants a folder with everything beneath it, so a folder
// that holds a protected path is opened file by file instead. This is a coarse outer
// wall; Step 0 stays the exact filter of what the agent changed.
//
//   - An anchored pattern (one with a slash: agent/, agent/*.py, src/**/x.go) grants
//     every folder it can match in or below, whole, so the agent can create files
//     there and editors that save by rename work.
//   - A pattern without a slash (PROGRAM.md, *.py) matches at any depth; it grants
//     only the existing files it matches, so it cannot open whole folders of the
//     benchmark to writing.
//
// Symlinks are never granted: the kernel would grant their target.
func agentWritable(root string, allow []string, protected []string) ([]string, error) {
	m := gitguard.NewMatcher(allow)
	var anchored []string
	anywhere := false // some pattern without a slash matches at any depth
	for _, p := range allow {
		if strings.HasPrefix(p, "!") {
			continue // a negation only narrows what the patterns match
		}
		if body := strings.TrimRight(p, "/"); strings.Contains(body, "/") {
			anchored = append(anchored, strings.TrimPrefix(body, "/"))
		} else {
			anywhere = true
		}
	}
	isProtected := func(abs string) bool {
		return slices.ContainsFunc(protected, func(p string) bool { return within(abs, p) })
	}
	holdsProtected := func(abs string) bool {
		return slices.ContainsFunc(protected, func(p string) bool { return within(p, abs) })
	}
	var out []string
	var visit func(rel string) error
	visit = func(rel string) error {
		ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return err
		}
		for _, e := range ents {
			childRel := path.Join(rel, e.Name())
			abs := filepath.Join(root, filepath.FromSlash(childRel))
			if isProtected(abs) || e.Type()&fs.ModeSymlink != 0 {
				continue
			}
			switch {
			case e.IsDir() && holdsProtected(abs):
				if err := visit(childRel); err != nil {
					return err
				}
			case e.IsDir() && m.Match(childRel, true):
				out = append(out, abs) // a folder the allowlist names (agent/ at any depth)
			case e.IsDir() && slices.ContainsFunc(anchored, func(p string) bool { return mayMatchBelow(p, childRel) }):
				out = append(out, abs)
			case e.IsDir() && anywhere:
				// No anchored pattern reaches in here: only files a slash-less pattern names.
				if err := visitFiles(m, root, childRel, &out); err != nil {
					return err
				}
			case e.Type().IsRegular() && m.Match(childRel, false):
				out = append(out, abs)
			}
		}
		return nil
	}
	if err := visit(""); err != nil {
		return nil, fmt.Errorf("sandbox: list the worktree: %w", err)
	}
	return out, nil
}

// visitFiles adds the regular files below rel that the allowlist matches.
func visitFiles(m *gitguard.Matcher, root, rel string, out *[]string) error {
	return filepath.WalkDir(filepath.Join(root, filepath.FromSlash(rel)), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			r, _ := filepath.Rel(root, p)
			if m.Match(filepath.ToSlash(r), false) {
				*out = append(*out, p)
			}
		}
		return nil
	})
}

// mayMatchBelow reports whether the anchored pattern can match dir itself or a path
// below it: each of its segments that dir has must match dir's segment, and a "**"
// matches any number of them.
func mayMatchBelow(pattern, dir string) bool {
	ps, ds := strings.Split(pattern, "/"), strings.Split(dir, "/")
	for i, d := range ds {
		if i >= len(ps) {
			return true // the pattern matched a parent folder: everything below is in
		}
		if ps[i] == "**" {
			return true
		}
		if ok, err := path.Match(ps[i], d); err != nil || !ok {
			return err != nil // a pattern path.Match cannot read is taken as a match: grant rather than break
		}
	}
	return true
}

// within reports whether p is base or below it.
func within(p, base string) bool {
	return p == base || strings.HasPrefix(p, base+string(filepath.Separator))
}

// expandPath resolves a loop.sandbox path: ~/ is the home folder, a relative path is
// relative to the repository root.
func expandPath(p, root string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("sandbox: %s: %w", p, err)
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	return filepath.Join(root, filepath.FromSlash(p)), nil
}

// jail is the sandbox of one agent phase.
type jail struct {
	policy *sandbox.Policy // nil: the agent runs unsandboxed
	tmp    string          // the agent's private TMPDIR, removed after the phase
}

// sandboxState decides at the start of a run whether the agent can be sandboxed: on by
// default, and a run refuses to start where the kernel offers no sandbox unless the
// user turned it off, so that no run is unsandboxed without saying so.
func sandboxState(cfg config.Sandbox) (string, error) {
	if !cfg.Enabled {
		return SandboxOff, nil
	}
	abi, err := sandbox.Available()
	if err != nil {
		return "", fmt.Errorf("loop: the agent cannot be sandboxed here (%v): run hgate loop --no-sandbox to run it as your own user, able to write anything you can (see the threat model in the README)", err)
	}
	if err := sandbox.Namespaces(); err != nil {
		// Landlock still holds; the agent's processes are then found through hgate
		// being their subreaper and their tag, not checked gone (README, Threat model).
		return fmt.Sprintf("landlock ABI %d, no namespaces (%v)", abi, err), nil
	}
	return fmt.Sprintf("landlock ABI %d", abi), nil
}

// SandboxOff is summary.json's "sandbox" for a run whose agent ran unsandboxed.
const SandboxOff = "off"

// openJail builds the policy of one agent phase: the agent may write where allow can
// match in the worktree, the message and learnings files, a private TMPDIR and
// loop.sandbox.writable (plus the preset's own config folders); it cannot read
// loop.sandbox.hidden or clean_room.test_only. .git, the workspace, hgate's lock and the clean rooms are
// outside what it may write. In a harness phase (harness true) it may write the harness
// folder instead of the worktree's allowed paths and the message file: a tool is all it
// builds there.
func (r *runner) openJail(harness bool) (*jail, error) {
	tmp, err := scratch.MkdirTemp(r.agentTmp, "hgate-agent-") // the next hgate removes it if the loop is killed
	if err != nil {
		return nil, fmt.Errorf("sandbox: private TMPDIR: %w", err)
	}
	jl := &jail{tmp: tmp}
	if r.j.Sandbox == SandboxOff {
		return jl, nil
	}
	root := r.repo.Root()
	hidden, protected, err := r.unseen()
	if err != nil {
		jl.close()
		return nil, err
	}
	var write []string
	if harness {
		dir, err := harnessDir(root, r.cfg.Harness.Dir)
		if err != nil {
			jl.close()
			return nil, err
		}
		write = append(write, dir, tmp)
	} else {
		write, err = agentWritable(root, r.env.Config.Allow, protected)
		if err != nil {
			jl.close()
			return nil, err
		}
		// The two workspace files the agent writes by design: hgate reads them, never trusts them.
		msg := r.ws.Message()
		if err := createIfMissing(msg); err != nil {
			jl.close()
			return nil, err
		}
		write = append(write, msg, tmp)
		if l := r.ws.Learnings(); fileExists(l) {
			write = append(write, l)
		}
	}
	if r.cfg.Harness.Enabled {
		// The proxies of the agent's MCP servers log its tools/calls here: the agent's
		// side's record, which hgate shows and never trusts.
		calls := filepath.Join(r.dir, mcpCallsName)
		if err := createIfMissing(calls); err != nil {
			jl.close()
			return nil, err
		}
		write = append(write, calls)
	}
	grant := func(field string, paths []string) error { // field names the paths' origin in errors
		for _, w := range paths {
			p, err := openWritable(field, w, root, protected)
			if err != nil {
				return err
			}
			if p != "" {
				write = append(write, p)
			}
		}
		return nil
	}
	err = grant("loop.sandbox.writable", r.cfg.Sandbox.Writable)
	if preset := r.cfg.Agent; err == nil && len(preset) == 1 {
		name := strings.TrimSpace(preset[0])
		err = grant("loop.agent: the "+name+" preset's folders", presetWritable(name))
	}
	if err != nil {
		jl.close()
		return nil, err
	}
	// Its own PID namespace: when its phase ends, every process of it is gone (the
	// kernel kills them with the shim, its init) before the loop gates what it left.
	jl.policy = &sandbox.Policy{Write: write, Hidden: hidden, Isolate: sandbox.Namespaces() == nil}
	return jl, nil
}

// unseen is what every agent's sandbox, one agent's or several's, hides (the rooms and
// private traces of the gates it asks for, the held-out records and their key, the run's private folder,
// loop.sandbox.hidden, clean_room.test_only) and what it may never be granted besides:
// .git, the workspace, the carried paths.
func (r *runner) unseen() (hidden, protected []string, err error) {
	root := r.repo.Root()
	protected = []string{filepath.Join(root, ".git"), string(r.ws), r.repo.GitDir(), r.repo.CommonDir()}
	for _, c := range r.env.Config.CleanRoom.Carry {
		protected = append(protected, filepath.Join(root, filepath.FromSlash(strings.TrimRight(c, "/"))))
	}
	if r.hiddenTmp != "" {
		hidden = append(hidden, r.hiddenTmp)
	}
	// The test split's per-task rewards (gate/heldout.go): made now, so that it is hidden
	// even when the first record is written during the agent's phase.
	heldout := gate.HeldOut(r.repo)
	for _, d := range []string{heldout, r.privateDir()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	hidden = append(hidden, heldout, r.privateDir()) // and the test split's spend (testspend.go)
	// The digest key (internal/digest): whoever reads it can check guesses of held-out and
	// test-only data against the digests the workspace and the ledger show.
	hidden = append(hidden, gate.DigestKey(r.repo))
	// clean_room.test_only is for test-split runs alone: hidden like loop.sandbox.hidden.
	for _, h := range slices.Concat(r.cfg.Sandbox.Hidden, r.env.Config.CleanRoom.TestOnly) {
		p, err := expandPath(h, root)
		if err != nil {
			return nil, nil, err
		}
		hidden = append(hidden, p)
		protected = append(protected, p)
	}
	return hidden, protected, nil
}

// openWritable resolves one loop.sandbox.writable path or a preset's (field names which,
// for errors), refusing one that would open a protected path; a folder (ending in /) is
// created, and so is a preset's file that has a start. It returns "" for a path that does
// not exist: nothing to grant.
func openWritable(field, w, root string, protected []string) (string, error) {
	p, err := expandPath(w, root)
	if err != nil {
		return "", err
	}
	if slices.ContainsFunc(protected, func(q string) bool { return within(p, q) || within(q, p) }) {
		return "", fmt.Errorf("%s: %s would open %s to the agent (expected a path outside .git, the workspace, carried and hidden paths)", field, w, p)
	}
	if strings.HasSuffix(w, "/") {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
	} else if start, ok := presetFileStart(p); ok {
		if err := createWith(p, start); err != nil {
			return "", fmt.Errorf("%s: %w", field, err)
		}
	}
	if _, err := os.Lstat(p); err != nil {
		return "", nil
	}
	return p, nil
}

func (jl *jail) close() { os.RemoveAll(jl.tmp) }

func createIfMissing(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// createWith creates path holding content, leaving a file already there as it is.
func createWith(path, content string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func fileExists(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode().IsRegular()
}

// harnessDir makes the harness folder and returns it, refusing one reached through a
// symlink: the kernel would grant the link's target, anywhere.
func harnessDir(root, rel string) (string, error) {
	dir := root
	for _, part := range strings.Split(path.Clean(rel), "/") {
		dir = filepath.Join(dir, part)
		fi, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			if err := os.Mkdir(dir, 0o755); err != nil {
				return "", fmt.Errorf("loop.harness.dir: %w", err)
			}
			continue
		}
		if err != nil {
			return "", fmt.Errorf("loop.harness.dir: %w", err)
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("loop.harness.dir: %s is not a folder (a symlink is never opened to the agent)", dir)
		}
	}
	return dir, nil
}
