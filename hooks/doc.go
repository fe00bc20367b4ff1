// Package hooks installs hgate's git hooks and runs them.
//
// Install writes a small sh script into the hooks folder git uses for the
// worktree (gitguard.Repo.HooksDir: core.hooksPath when set, else the hooks
// folder of the common git directory, which every linked worktree shares, so
// one install covers them all). The script is marked by the line Marker, so
// installing again rewrites only hgate's own file and uninstalling removes
// only it. A hook that was already there and is not hgate's (a symlink
// included) is renamed NAME.pre-hgate and run first by hgate's script; when
// it fails, the commit fails, as it did before. Uninstall puts it back.
//
// Hook managers (Managers: lefthook, the pre-commit framework) keep a foreign
// hook in a slot of their own (NAME.old, NAME.legacy). When a manager's hook
// is in front, hgate's goes into that slot, where the manager would have put
// it, so the tools can be installed and uninstalled in any order without one
// backup overwriting the other. The pre-commit framework runs its slot;
// lefthook does not, and needs "hgate hooks run NAME" in its configuration
// (LefthookRunsHgate).
//
// The script calls the hgate binary by the absolute path it was installed
// with, and falls back to hgate on PATH when that path is gone (a moved or
// upgraded binary); a hook that finds no hgate at all fails, and so refuses
// the commit rather than let it through unchecked.
//
// The pre-commit hook (PreCommit) checks only what is being committed: the
// index named by $GIT_INDEX_FILE, which git sets for every hook ("git commit
// -a" and "git commit PATH" stage into a temporary index), against HEAD's
// tree, and never the worktree. The check itself is gitguard's
// (Repo.CheckStaged), like all of hgate's git access: this package installs
// hooks and calls it. The command line passes the allowlist from hgate.yaml
// as every hgate command reads it: from the last gated commit (else HEAD),
// so an edit of hgate.yaml cannot widen it.
//
// "git commit --no-verify" skips every hook, and an agent can change
// core.hooksPath; the hook is a convenience that stops a forbidden commit
// early, not the guard. Step 0 of the gate checks the commits made since the
// last gated commit and catches whatever got past the hook.
//
// The same check can run from the pre-commit framework (.pre-commit-hooks.yaml
// at the repository root, hook id hgate-guard) or from lefthook; see
// lefthook.example.yml in this folder:
//
//	pre-commit:
//	  jobs:
//	    - name: hgate-guard
//	      run: hgate hooks run pre-commit
package hooks
