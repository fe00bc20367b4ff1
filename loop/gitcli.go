package loop

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/hgate/hgate/gitguard"
)

// The git CLI does what go-git cannot: linked worktrees and a real three-way merge
// (git merge-tree --write-tree, git 2.38 or later). Only loop.agents > 1 needs it.

// git runs git in dir with env added and returns its trimmed stdout; a non-zero exit is
// an error carrying its stderr, and its exit code.
func git(dir string, env []string, args ...string) (string, int, error) {
	// No hook runs (git worktree add would run post-checkout), nor an fsmonitor: hgate
	// drives git, and nothing of the repository's configuration runs code for it.
	cmd := exec.Command("git", append([]string{"-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if err != nil {
		return strings.TrimSpace(out.String()), code, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), 0, nil
}

// authorEnv makes a commit git writes the loop's, as go-git's commits are.
func authorEnv(a gitguard.Signature, when string) []string {
	return []string{
		"GIT_AUTHOR_NAME=" + a.Name, "GIT_AUTHOR_EMAIL=" + a.Email, "GIT_AUTHOR_DATE=" + when,
		"GIT_COMMITTER_NAME=" + a.Name, "GIT_COMMITTER_EMAIL=" + a.Email, "GIT_COMMITTER_DATE=" + when,
	}
}
