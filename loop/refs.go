package loop

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hgate/hgate/gitguard"
)

// refWatch is where the journal keeps the snapshot of refs/hgate/* an agents' phase is
// checked against, and what moved behind hgate's back since (tamper, which rejects the
// phase's attempts unscored): the journal's own fields for the single agent, the
// generation's for its agents. Both are taken, checked and put back by its methods.
type refWatch struct {
	mu     *sync.Mutex // orders the watch's journal writes with the others of its kind
	snap   *gitguard.RefSnapshot
	tamper *[]string
	who    string // for the log: "iteration 3", "generation 2"
	agent  string // "the agent", "an agent"

	repo  *gitguard.Repo
	check func() error // the repository's config (runner.checkGit)
	save  func() error // the journal
	log   io.Writer
}

// soloRefs is the single agent's watch, in iteration n.
func (r *runner) soloRefs(n int) refWatch {
	return refWatch{mu: &r.refsMu, snap: &r.j.Refs, tamper: &r.j.Tamper, who: fmt.Sprintf("iteration %d", n), agent: "the agent",
		repo: r.repo, check: r.checkGit, save: r.save, log: r.log}
}

// servedRefs is the watch the single agent's served commands run through: its phase's,
// the journal's (none before the run's journal is open).
func (r *runner) servedRefs() (refWatch, bool) {
	if r.j == nil {
		return refWatch{}, false
	}
	return r.soloRefs(r.j.Next), true
}

// genRefs is the watch of generation g's agents, which run side by side (genMu).
func (r *runner) genRefs(g *generation) refWatch {
	return refWatch{mu: &r.genMu, snap: &g.Refs, tamper: &g.Tamper, who: fmt.Sprintf("generation %d", g.Number), agent: "an agent",
		repo: r.repo, check: r.checkGit, save: r.save, log: r.log}
}

// take takes refs/hgate/* into the snapshot before an agents' phase, with what also sets
// (nil: nothing) in the same journal write: what moves them behind hgate's back is put
// back after it, and a resume that finds the phase without a snapshot knows it was
// removed.
func (w refWatch) take(also func()) error {
	snap, err := w.repo.SnapshotRefs(gitguard.RefPrefix)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	*w.snap = snap
	if also != nil {
		also()
	}
	return w.save()
}

// end compares refs/hgate/* with the snapshot once the agents of its phase have ended:
// what moved is put back and counted against the phase. From here on hgate's own work
// moves the refs, so the snapshot is dropped, and next moves the phase on, in the same
// journal write. Without a snapshot (only a resume a human approved gets here without
// one: its attempts are set aside unscored already) only the repository's config is
// checked, and the phase moves on all the same.
func (w refWatch) end(next func()) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.putBack(); err != nil {
		return err
	}
	*w.snap = nil
	next()
	return w.save()
}

// refresh runs before each command served to an agent, so that it sees hgate's refs as
// hgate left them: what moved behind hgate's back is put back and counted against the
// phase, in the journal before the command runs. The caller holds w.mu.
func (w refWatch) refresh() {
	moved, err := w.putBack()
	if err == nil && moved {
		err = w.save()
	}
	if err != nil {
		fmt.Fprintf(w.log, "[loop] %v\n", err)
	}
}

// putBack compares refs/hgate/* with the snapshot, taken before the agents of a phase
// started (or after the last command served to them): what moved behind hgate's back is
// put back, logged, and added to tamper; moved says whether anything did. The caller
// holds w.mu and saves the journal. Without a snapshot only the repository's config is
// checked.
func (w refWatch) putBack() (moved bool, err error) {
	snap := *w.snap
	if err := w.check(); err != nil || snap == nil {
		return false, err
	}
	now, err := w.repo.SnapshotRefs(gitguard.RefPrefix)
	if err != nil {
		return false, err
	}
	changed := snap.Changed(now)
	if len(changed) == 0 {
		return false, nil
	}
	if err := w.repo.RestoreRefs(gitguard.RefPrefix, snap); err != nil {
		return false, fmt.Errorf("%s: put back the refs %s changed: %w", w.who, w.agent, err)
	}
	fmt.Fprintf(w.log, "[loop] %s: %s changed hgate's refs behind its back; put back: %s\n", w.who, w.agent, strings.Join(changed, "; "))
	*w.tamper = append(*w.tamper, changed...)
	return true, nil
}

// checkRefs closes the single agent's phase of iteration n (the attempt, a repair, a
// harness phase): see end. The journal goes to the gate without the snapshot in one
// write, so none shows the agent's phase without it. A harness phase stays where it is
// until its worktree is put back; the journal says its agent has ended (and what it
// spent), so a resume neither counts that again nor takes the phase for the gate.
func (r *runner) checkRefs(n int) error {
	j := r.j
	return r.soloRefs(n).end(func() {
		if j.Phase == phaseAgent {
			j.Phase = phaseGate
		} else {
			j.AgentEnded = true
		}
	})
}

// serve runs fn, a command served to an agent of the watch's phase, so that it sees
// hgate's refs as hgate left them (refresh). retake: the command may move hgate's refs
// itself (the single agent's gate and bench, in the repository's worktree, write the
// ledger), and what they hold after it is the new expected state; a generation's agents'
// commands write none of hgate's state. Without a snapshot (no agents' phase holds one)
// fn just runs.
func (w refWatch) serve(fn func(), retake bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if *w.snap == nil {
		fn()
		return
	}
	w.refresh()
	fn()
	if !retake {
		return
	}
	if snap, err := w.repo.SnapshotRefs(gitguard.RefPrefix); err == nil {
		*w.snap = snap
		_ = w.save()
	}
}

// checkGit stops the run when the repository's config or info/attributes changed since
// the run began (git would obey them; see gitguard/gitrun), naming the change, or git
// itself did.
func (r *runner) checkGit() error {
	if r.wts == nil {
		return nil
	}
	return r.wts.Check()
}
