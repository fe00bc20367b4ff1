package gate

import (
	"os"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/harness"
	"github.com/hgate/hgate/workspace"
)

// What harness qualification (package harness/qualify) shares with the gate: the state
// check, the gated commit, the clock, and one ledger write.

// CheckState is verify for qualification: the trust anchors and state files as the
// ledger last left them.
func (e *Env) CheckState() error { return store{e}.verify() }

// GatedTree is the tree of the gated commit.
func (e *Env) GatedTree() (plumbing.Hash, error) {
	gated, err := gatedBase(e.Repo)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	return e.Repo.TreeOf(gated)
}

// ApplyState records one state file's new content through the ledger.
func (e *Env) ApplyState(message, name string, marshal func() ([]byte, error)) error {
	c := changes{}
	if err := c.add(name, marshal); err != nil {
		return err
	}
	return store{e}.apply(message, c)
}

// Registry reads harness.json: nil when no qualification has run.
func (e *Env) Registry() (*harness.Registry, error) {
	p := e.ws().Path(workspace.Harness)
	data, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return harness.ParseRegistry(e.Display(p), data)
}
