package gitguard

import "testing"

// A linked worktree's hgate refs are stored under refs/hgate/worktrees/<id>/ and read back
// under their usual names; the main worktree's stay where they were, and neither sees the
// other's.
func TestWorktreeRefNames(t *testing.T) {
	main := &Repo{}
	linked := &Repo{worktree: "wt1"}
	for _, tc := range []struct {
		repo   *Repo
		name   string
		stored string
	}{
		{main, "refs/hgate/ledger", "refs/hgate/ledger"},
		{main, "refs/heads/main", "refs/heads/main"},
		{linked, "refs/hgate/ledger", "refs/hgate/worktrees/wt1/ledger"},
		{linked, "refs/hgate/attempts/run/1", "refs/hgate/worktrees/wt1/attempts/run/1"},
		{linked, "refs/heads/main", "refs/heads/main"},
	} {
		if got := tc.repo.RefName(tc.name); got != tc.stored {
			t.Errorf("%q.RefName(%q) = %q, want %q", tc.repo.worktree, tc.name, got, tc.stored)
		}
		if got, ok := tc.repo.refAsNamed(tc.stored); !ok || got != tc.name {
			t.Errorf("%q.refAsNamed(%q) = %q, %v; want %q", tc.repo.worktree, tc.stored, got, ok, tc.name)
		}
	}
	for _, tc := range []struct {
		repo   *Repo
		stored string
	}{
		{main, "refs/hgate/worktrees/wt1/ledger"},
		{linked, "refs/hgate/ledger"},
		{linked, "refs/hgate/worktrees/wt2/gated"},
	} {
		if got, ok := tc.repo.refAsNamed(tc.stored); ok {
			t.Errorf("%q sees %q as its own %q", tc.repo.worktree, tc.stored, got)
		}
	}
	if id := worktreeID("/r/.git/worktrees/a b~c", "/r/.git"); id == "a b~c" || len(id) != 16 {
		t.Errorf("worktreeID of an invalid ref component = %q, want a hash", id)
	}
	if id := worktreeID("/r/.git/worktrees/wt1", "/r/.git"); id != "wt1" {
		t.Errorf("worktreeID = %q, want wt1", id)
	}
	if id := worktreeID("/r/.git/modules/sub", "/r/.git/modules/sub"); id != "" {
		t.Errorf("worktreeID of a submodule = %q, want \"\"", id)
	}
}
