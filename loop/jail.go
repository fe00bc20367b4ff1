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

	"github.com/hgate/hgate/gitguard"
)

// presetWritable are the folders and files each preset's tool keeps its own settings,
// sessions and logs in: without them the real CLI cannot start inside the sandbox.
var presetWritable = map[string][]string{
	"claude": {"~/.claude", "~/.claude.json", "~/.cache/claude", "~/.config/claude"},
	"codex":  {"~/.codex"},
	"aider":  {"~/.aider"},
}

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
