package gate

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/digest"
	"github.com/hgate/hgate/ledger"
)

// RebaseReport is what hgate state rebase did.
type RebaseReport struct {
	Head         plumbing.Hash // the new gated commit
	Previous     plumbing.Hash // where refs/hgate/gated was (zero: absent)
	Best         plumbing.Hash // refs/hgate/best now (zero: absent)
	BestRestored bool          // refs/hgate/best was put back where hgate last put it
	Carry        []ledger.CarriedEntry
	CarryNamed   bool // clean_room.carry names paths (at HEAD)
}

// Rebase takes HEAD as the new gated commit on purpose, in one ledger entry ("manual
// rebase: ..."): hgate.yaml as HEAD has it becomes the configuration hgate reads, the
// paths its clean_room.carry names are accepted as they are now, and refs/hgate/best is
// put back where hgate last put it. The caller holds the repository lock.
func Rebase(e *Env) (*RebaseReport, error) {
	repo := e.Repo
	head, _, err := repo.Head()
	if err != nil {
		return nil, err
	}
	l := ledger.Open(repo, e.Config.WorkspaceDir())
	if tip, err := l.Tip(); err != nil {
		return nil, err
	} else if tip.IsZero() {
		return nil, fmt.Errorf("nothing to rebase: the ledger %s does not exist yet; run hgate prepare (it marks HEAD gated)", gitguard.LedgerRef)
	}
	// hgate.yaml as HEAD has it becomes the configuration hgate reads: its carry list is
	// the one to accept.
	cfg, err := configAt(repo, head, e.Config.File)
	if err != nil {
		return nil, err
	}
	// A rebase keeps the baseline: it cannot take a benchmark the baseline was not taken under.
	if err := (measuredCheck{e}).checkMeasured(cfg, fmt.Sprintf("%s at HEAD %s", e.Config.File, head.String()[:7]), "state rebase refused: "); err != nil {
		return nil, err
	}
	key, err := digestKey(e)
	if err != nil {
		return nil, err
	}
	old, err := l.Carry()
	if err != nil {
		return nil, err
	} else if key == nil && old != nil && old.Keyed() {
		return nil, digest.LostKey(repo.CommonDir())
	}
	m, err := ledger.BuildManifest(repo.Root(), cfg.CleanRoom.Carry, key)
	if err != nil {
		return nil, err
	}
	if old != nil {
		m.Outside = old.Outside // a rebase accepts carried files, never data the baseline was measured on
	}
	prev, known, err := ledger.ExpectedRef(repo, gitguard.GatedRef)
	if err != nil {
		return nil, err
	}
	if !known {
		if prev, err = repo.Ref(gitguard.GatedRef); err != nil {
			return nil, err
		}
	}
	refs := map[string]plumbing.Hash{gitguard.GatedRef: head}
	best, bestKnown, err := ledger.ExpectedRef(repo, gitguard.BestRef)
	if err != nil {
		return nil, err
	}
	bestNow, err := repo.Ref(gitguard.BestRef)
	if err != nil {
		return nil, err
	}
	if bestKnown && bestNow != best {
		refs[gitguard.BestRef] = best
	} else {
		best = bestNow
	}
	msg := fmt.Sprintf("manual rebase: %s %s → %s (HEAD); clean_room.carry: %d file(s) accepted",
		gitguard.GatedRef, ShortOrNone(prev), head.String()[:7], len(m.Files))
	if err := l.Commit(ledger.Update{Message: msg, Refs: refs, Carry: m}); err != nil {
		return nil, err
	}
	_, restored := refs[gitguard.BestRef]
	return &RebaseReport{Head: head, Previous: prev, Best: best, BestRestored: restored, Carry: m.Files, CarryNamed: len(cfg.CleanRoom.Carry) > 0}, nil
}

// ShortOrNone is a hash as messages show it: 7 digits, or "none" when zero.
func ShortOrNone(h plumbing.Hash) string {
	if h.IsZero() {
		return "none"
	}
	return h.String()[:7]
}

// RebaseJSON is hgate state rebase --json; a ref that is absent is null.
type RebaseJSON struct {
	Best         *string               `json:"best"`
	BestRestored bool                  `json:"best_restored"`
	Carry        []ledger.CarriedEntry `json:"carry"`
	Gated        string                `json:"gated"`
	Previous     *string               `json:"previous"`
}

// JSON is the report as hgate state rebase --json prints it.
func (r *RebaseReport) JSON() RebaseJSON {
	return RebaseJSON{Best: HashOrNull(r.Best), BestRestored: r.BestRestored, Carry: r.Carry, Gated: r.Head.String(), Previous: HashOrNull(r.Previous)}
}
