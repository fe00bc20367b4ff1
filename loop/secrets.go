package loop

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/gitguard"
)

// openGit checks the repository's config and anchors it; without a git command on PATH
// the loop runs no git, and says so where it needs one.
func (r *runner) openGit() error {
	w, err := r.repo.Worktrees()
	var changed *gitguard.ProgramChangedError
	switch {
	case errors.Is(err, gitguard.ErrNoGit):
		return nil
	case errors.As(err, &changed):
		return err
	case err != nil:
		// A key or attribute hgate's git may not obey (or a config git cannot read) is the
		// user's to remove: a refusal, about the file it names.
		where, fix := filepath.Join(r.repo.CommonDir(), "config"), "git config --unset each key it names"
		if attrs := filepath.Join(r.repo.CommonDir(), "info", "attributes"); strings.HasPrefix(err.Error(), attrs) {
			where, fix = attrs, "delete each attribute it names from "+attrs
		}
		return RefusalLines(err.Error(), where, fix+", then run hgate loop again")
	}
	r.wts = w
	return nil
}

// trackedSecrets refuses a sandboxed run when a path the agent may not read
// (loop.sandbox.hidden, clean_room.test_only) is in git's history: the sandbox hides the
// file, but the agent reads .git, where `git show` prints every object of every commit.
// The check asks the git CLI (rev-list over every ref); without one it says it could not.
func (r *runner) trackedSecrets() error {
	if r.wts == nil {
		fmt.Fprintln(r.log, "[loop] warning: no git command on PATH: cannot check that loop.sandbox.hidden and clean_room.test_only were never committed (the agent can read .git)")
		return nil
	}
	root := r.repo.Root()
	keys := []struct {
		key   string
		paths []string
	}{{"loop.sandbox.hidden", r.cfg.Sandbox.Hidden}, {"clean_room.test_only", r.env.Config.CleanRoom.TestOnly}}
	var found []string
	for _, k := range keys {
		for _, p := range k.paths {
			abs, err := expandPath(p, root)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, abs)
			if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				continue // outside the repository: git holds none of it
			}
			commit, err := r.wts.Committed(filepath.ToSlash(rel))
			if err != nil {
				return fmt.Errorf("loop: %s: %s: %w", k.key, p, err)
			}
			if commit != "" {
				found = append(found, fmt.Sprintf("%s: %s (in commit %.7s)", k.key, p, commit))
			}
		}
	}
	if len(found) == 0 {
		return nil
	}
	return &NotStarted{Reason: "data hidden from the agent is committed to git, so the agent can read it from .git's objects (git show) although its sandbox hides the files",
		Where: r.env.Config.File + ": " + strings.Join(found, "; "),
		Fix:   "keep such data untracked (clean_room.carry brings it into the room) and out of every commit of every ref, or run hgate loop --no-sandbox knowing the agent can read it"}
}
