package loop

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/workspace"
)

// Every anchor a resume trusts is checked, and a resume that cannot check one stops
// until a human has looked: an agent without the sandbox can write the journal, and
// "a field is missing" must not read as "nothing to check".

// The refusal a resume wrote, and a human's approval of it (hgate state restore or
// accept), in the run's folder.
const (
	refusedName  = "resume-refused"
	approvedName = "resume-approved"
)

// maxJournal bounds the journal a resume reads; hgate's own is a few KiB per iteration.
const maxJournal = 64 << 20

// readJournal reads a run's journal, refusing one larger than maxJournal.
func readJournal(path string) ([]byte, error) {
	data, cut, err := statefile.ReadHead(path, maxJournal)
	if err == nil && cut {
		err = fmt.Errorf("%s: larger than %d bytes: not a journal hgate wrote", path, maxJournal)
	}
	return data, err
}

// anchorCheck checks the anchors of a journal a resume reads against the repository:
// the commits it names, and its refs snapshot against the ledger that snapshot names.
type anchorCheck struct{ repo *gitguard.Repo }

// problem is why the journal's anchors cannot be trusted, or "".
func (c anchorCheck) problem(j *journal) string {
	if why := fieldsProblem(j); why != "" {
		return why
	}
	if g := j.Gen; g != nil {
		if why := c.gen(g); why != "" || g.Phase == genAgents {
			return why
		}
	}
	if j.Phase == phaseAgent && j.Current.Sandbox == "" {
		return "current: sandbox: missing (how the agent ran is not recorded)"
	}
	switch j.Phase {
	case phaseAgent, phaseGate, phaseAttempt, phaseRestore:
		if why := c.commit("pre_head", j.PreHead); why != "" {
			return why
		}
	case phaseCommit, phaseRecord:
		if why := c.commit("commit_parent", j.CommitParent); why != "" {
			return why
		}
	}
	if j.Phase != phaseAgent {
		return ""
	}
	if j.Refs == nil {
		return fmt.Sprintf("refs: missing for iteration %d's agent phase (the snapshot of refs/hgate/* that checks what the agent moved)", j.Next)
	}
	return c.snapshot(j.Refs)
}

// fieldsProblem is why the journal lacks what every resume needs, or "".
func fieldsProblem(j *journal) string {
	switch {
	case j.RunID == "":
		return "run_id: missing"
	case j.Next < 1:
		return fmt.Sprintf("next: %d (expected an iteration, 1 or more)", j.Next)
	case j.Sandbox == "":
		return "sandbox: missing (how the agent ran is not recorded)"
	case j.Phase != phaseNone && j.Current == nil:
		return fmt.Sprintf("current: missing for phase %q", j.Phase)
	}
	return ""
}

// gen checks the generation in progress: its base and candidates must be commits
// here, and in the agents' phase its refs snapshot must match the ledger it names.
func (c anchorCheck) gen(g *generation) string {
	if why := c.commit("generation: base", g.Base); why != "" {
		return why
	}
	for _, a := range g.Agents {
		if a.Candidate == "" {
			continue
		}
		if why := c.commit(fmt.Sprintf("generation: agents[%d]: candidate", a.Index-1), a.Candidate); why != "" {
			return why
		}
	}
	if g.Phase != genAgents {
		return ""
	}
	if g.Refs == nil {
		return fmt.Sprintf("generation: refs: missing for generation %d's agents (the snapshot of refs/hgate/* that checks what they moved)", g.Number)
	}
	return c.snapshot(g.Refs)
}

// commit checks a journal field that must name a commit of the repository.
func (c anchorCheck) commit(field, v string) string {
	if len(v) != 40 || !plumbing.IsHash(v) {
		return fmt.Sprintf("%s: %q is not a commit id", field, v)
	}
	if _, err := c.repo.Commit(plumbing.NewHash(v)); err != nil {
		return fmt.Sprintf("%s: %s is not a commit of this repository", field, v[:12])
	}
	return ""
}

// snapshot checks the refs snapshot against the ledger it names: hgate takes it
// with the anchors where that ledger commit put them.
func (c anchorCheck) snapshot(snap map[string]string) string {
	tip, err := c.repo.Ref(gitguard.LedgerRef)
	if err != nil {
		return err.Error()
	}
	at, ok := snap[gitguard.LedgerRef]
	switch {
	case !ok && tip.IsZero():
		return "" // no ledger yet, nor then
	case !ok:
		return "refs: the snapshot has no " + gitguard.LedgerRef
	case len(at) != 40 || !plumbing.IsHash(at):
		return fmt.Sprintf("refs: %s: %q is not a commit id", gitguard.LedgerRef, at)
	}
	anchors, ok, err := ledger.AnchorsAt(c.repo, plumbing.NewHash(at))
	if err != nil {
		return fmt.Sprintf("refs: %s: %s: %v", gitguard.LedgerRef, at[:12], err)
	}
	if !ok {
		return "" // a ledger from before anchors records none
	}
	for _, name := range ledger.Anchors() {
		want, got := anchors[name], snap[name]
		if want.IsZero() && got == "" || got == want.String() {
			continue
		}
		return fmt.Sprintf("refs: the snapshot does not match the ledger it names: %s is %s there, %s in ledger entry %s", name, orNone(got), orNone(want.String()), at[:12])
	}
	return ""
}

func orNone(h string) string {
	if h == "" || h == plumbing.ZeroHash.String() {
		return "absent"
	}
	return h[:12]
}

// refuse stops a resume whose anchors cannot be checked, unless a human approved this
// very refusal (nil is returned, and the approval is used up).
func (r *runner) refuse(id, why string) error {
	refused, approval := filepath.Join(r.dir, refusedName), filepath.Join(r.dir, approvedName)
	line := []byte(why + "\n")
	a, aerr := os.ReadFile(approval)
	f, ferr := os.ReadFile(refused)
	if aerr == nil && ferr == nil && bytes.Equal(a, line) && bytes.Equal(f, line) {
		os.Remove(approval)
		os.Remove(refused)
		fmt.Fprintf(r.log, "[loop] resuming run %s as a human approved (%s)\n", id, why)
		return nil
	}
	os.Remove(approval)
	if err := writeAtomic(refused, line); err != nil {
		return err
	}
	return &NotStarted{Reason: fmt.Sprintf("run %s cannot be resumed: %s", id, why), Where: filepath.Join(r.dir, journalName),
		Fix: "check hgate state log (a manual entry you did not make?) and git log refs/hgate/gated..HEAD, then run hgate state restore or hgate state accept, and hgate loop --resume again (the unchecked attempt is then set aside, never gated)"}
}

// ApproveResume records a human's approval of the last loop run's refused resume, which
// hgate state restore and accept give; the run's id, or "" when no resume was refused.
func ApproveResume(ws workspace.Dir) (string, error) {
	id, err := lastRun(ws.Runs())
	if errors.Is(err, errNoRun) || errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	dir := filepath.Join(ws.Runs(), id)
	data, err := os.ReadFile(filepath.Join(dir, refusedName))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return id, writeAtomic(filepath.Join(dir, approvedName), data)
}
