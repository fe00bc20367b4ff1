package loop

import (
	"fmt"
	"strings"
	"sync"

	"github.com/hgate/hgate/gitguard"
)

// refWatch is where the journal keeps the snapshot of refs/hgate/* an agents' phase is
// checked against, and what moved behind hgate's back since (tamper, which rejects the
// phase's attempts unscored): the journal's own fields for the single agent, the
// generation's for its agents. Both are checked by the same functions.
type refWatch struct {
	mu     *sync.Mutex // orders the watch's journal writes with the others of its kind
	snap   *gitguard.RefSnapshot
	tamper *[]string
	who    string // for the log: "iteration 3", "generation 2"
	agent  string // "the agent", "an agent"
}

// soloRefs is the single agent's watch, in iteration n.
func (r *runner) soloRefs(n int) refWatch {
	return refWatch{mu: &r.refsMu, snap: &r.j.Refs, tamper: &r.j.Tamper, who: fmt.Sprintf("iteration %d", n), agent: "the agent"}
}

// genRefs is the watch of generation g's agents, which run side by side (genMu).
func (r *runner) genRefs(g *generation) refWatch {
	return refWatch{mu: &r.genMu, snap: &g.Refs, tamper: &g.Tamper, who: fmt.Sprintf("generation %d", g.Number), agent: "an agent"}
}

// checkRefs closes the single agent's phase of iteration n (the attempt, a repair, a
// harness phase): see endRefs. The journal goes to the gate without the snapshot in one
// write, so none shows the agent's phase without it. A harness phase stays where it is
// until its worktree is put back; the journal says its agent has ended (and what it
// spent), so a resume neither counts that again nor takes the phase for the gate.
func (r *runner) checkRefs(n int) error {
	j := r.j
	return r.endRefs(r.soloRefs(n), func() {
		if j.Phase == phaseAgent {
			j.Phase = phaseGate
		} else {
			j.AgentEnded = true
		}
	})
}

// watchRefs takes refs/hgate/* into w's snapshot before an agents' phase, with what also
// sets (nil: nothing) in the same journal write: what moves them behind hgate's back is
// put back after it, and a resume that finds the phase without a snapshot knows it was
// removed.
func (r *runner) watchRefs(w refWatch, also func()) error {
	snap, err := r.repo.SnapshotRefs(gitguard.RefPrefix)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	*w.snap = snap
	if also != nil {
		also()
	}
	return r.save()
}

// endRefs compares refs/hgate/* with w's snapshot once the agents of its phase have
// ended: what moved is put back and counted against the phase. From here on hgate's own
// work moves the refs, so the snapshot is dropped, and next moves the phase on, in the
// same journal write. Without a snapshot (only a resume a human approved gets here
// without one: its attempts are set aside unscored already) only the repository's config
// is checked, and the phase moves on all the same.
func (r *runner) endRefs(w refWatch, next func()) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := r.putBackRefs(w); err != nil {
		return err
	}
	*w.snap = nil
	next()
	return r.save()
}

// refreshRefs runs before each command served to an agent, so that it sees hgate's refs
// as hgate left them: what moved behind hgate's back is put back and counted against the
// phase, in the journal before the command runs. The caller holds w.mu.
func (r *runner) refreshRefs(w refWatch) {
	moved, err := r.putBackRefs(w)
	if err == nil && moved {
		err = r.save()
	}
	if err != nil {
		fmt.Fprintf(r.log, "[loop] %v\n", err)
	}
}

// served runs fn, a command the single agent asked the loop for, so that it sees hgate's
// refs as hgate left them (refreshRefs), and takes what the command itself wrote (the
// ledger) as the new expected state.
func (r *runner) served(fn func()) {
	r.refsMu.Lock()
	defer r.refsMu.Unlock()
	if r.j == nil || r.j.Refs == nil {
		fn()
		return
	}
	r.refreshRefs(r.soloRefs(r.j.Next))
	fn()
	if snap, err := r.repo.SnapshotRefs(gitguard.RefPrefix); err == nil {
		r.j.Refs = snap
		_ = r.save()
	}
}

// putBackRefs compares refs/hgate/* with w's snapshot, taken before the agents of a
// phase started (or after the last command served to them): what moved behind hgate's
// back is put back, logged, and added to w's tamper; moved says whether anything did.
// The caller holds w.mu and saves the journal. Without a snapshot only the repository's
// config is checked.
func (r *runner) putBackRefs(w refWatch) (moved bool, err error) {
	snap := *w.snap
	if err := r.checkGit(); err != nil || snap == nil {
		return false, err
	}
	now, err := r.repo.SnapshotRefs(gitguard.RefPrefix)
	if err != nil {
		return false, err
	}
	changed := snap.Changed(now)
	if len(changed) == 0 {
		return false, nil
	}
	if err := r.repo.RestoreRefs(gitguard.RefPrefix, snap); err != nil {
		return false, fmt.Errorf("%s: put back the refs %s changed: %w", w.who, w.agent, err)
	}
	fmt.Fprintf(r.log, "[loop] %s: %s changed hgate's refs behind its back; put back: %s\n", w.who, w.agent, strings.Join(changed, "; "))
	*w.tamper = append(*w.tamper, changed...)
	return true, nil
}

// checkGit stops the run when the repository's config or info/attributes changed since
// the run began (git would obey them; see gitguard/gitrun), naming the change.
func (r *runner) checkGit() error {
	if r.wts == nil {
		return nil
	}
	return r.wts.Check()
}
