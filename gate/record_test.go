package gate

import (
	"errors"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/workspace"
)

// TestCheckRange pins record's check of the commits since the last gated commit: a path
// outside allow is refused, allowed paths and file_guard: false are not.
func TestCheckRange(t *testing.T) {
	repo := gittest.New(t)
	repo.WriteFiles(map[string]string{"agent.sh": "v1\n", "check.sh": "v1\n"})
	base := plumbing.NewHash(repo.Commit("base"))
	repo.Write("agent.sh", "v2\n")
	allowed := plumbing.NewHash(repo.Commit("allowed"))
	repo.Write("check.sh", "v2\n")
	forbidden := plumbing.NewHash(repo.Commit("forbidden"))
	r, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		from, to   plumbing.Hash
		fileGuard  bool
		wantRefuse bool
	}{
		{"allowed change", base, allowed, true, false},
		{"forbidden change", base, forbidden, true, true},
		{"forbidden change, guard off", base, forbidden, false, false},
		{"nothing gated yet", plumbing.ZeroHash, forbidden, true, false},
		{"head is the gated commit", forbidden, forbidden, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Env{Repo: r, Config: &config.Config{Allow: []string{"agent.sh"}, FileGuard: tt.fileGuard}}
			err := recording{e}.checkRange(tt.from, tt.to)
			var refused *Refused
			if got := errors.As(err, &refused); got != tt.wantRefuse {
				t.Fatalf("checkRange: %v, want refused %v", err, tt.wantRefuse)
			}
			if tt.wantRefuse && refused.Reason != "the commits since the last gated commit "+tt.from.String()[:7]+" change paths outside allow: check.sh" {
				t.Fatalf("reason %q", refused.Reason)
			}
		})
	}
}

// TestLedgerCopy pins record's second look: a receipt (or results.tsv) swapped after the
// state was verified is not taken from disk; the ledger's copy must match it.
func TestLedgerCopy(t *testing.T) {
	repo := gittest.New(t)
	repo.Write("a.txt", "a\n")
	repo.Commit("one")
	r, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{Repo: r, Config: &config.Config{Workspace: "workspace", Dir: repo.Dir}}
	tree := "0123456789012345678901234567890123456789"
	rejected := []byte(`{"tree": "` + tree + `", "verdict": "reject", "val_score": 0.2}` + "\n")
	if err := (store{e}).apply("gate: reject", changes{workspace.Receipt(tree): rejected}); err != nil {
		t.Fatal(err)
	}
	if rc, err := (store{e}).receipt(tree); err != nil || rc.Verdict != "reject" {
		t.Fatalf("unchanged receipt: %+v, %v", rc, err)
	}
	repo.Write("workspace/"+workspace.Receipt(tree), `{"tree": "`+tree+`", "verdict": "pass", "val_score": 1.0}`+"\n")
	if _, err := (store{e}).receipt(tree); err == nil || err.Error() != "workspace/receipts/"+tree+".json differs from the ledger's copy (changed while hgate ran): run `hgate state restore`" {
		t.Fatalf("swapped receipt: %v", err)
	}
	// A receipt the ledger never held is no receipt, whatever is on disk.
	other := "1111111111111111111111111111111111111111"
	repo.Write("workspace/"+workspace.Receipt(other), `{"verdict": "pass"}`+"\n")
	if _, err := (store{e}).receipt(other); err == nil {
		t.Fatal("a receipt only on disk was taken")
	}
	if rc, err := (store{e}).receipt("2222222222222222222222222222222222222222"); err != nil || rc != nil {
		t.Fatalf("no receipt anywhere: %+v, %v", rc, err)
	}
}
