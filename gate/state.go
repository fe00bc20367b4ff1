package gate

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/scratch"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/workspace"
)

// store is the workspace's state as the ledger keeps it: the checks every workflow starts
// with, the one way state is written, and the reads of the ledger's copies (receipts,
// baseline.json, the split, the best's record).
type store struct{ *Env }

// ledger is the git-kept copy of the workspace's state files. Every workflow verifies
// the workspace against it first and writes state only through it.
func (e *Env) ledger() *ledger.Ledger { return ledger.Open(e.Repo, e.Config.WorkspaceDir()) }

// verify checks the state at the start of a command: the trust anchors (refs/hgate/gated,
// refs/hgate/best) must be where the ledger last put them, and the state files must match
// it. A write or a ref move cut short by a crash is finished (and said so); any other
// difference — a ref moved, a suite emptied, a threshold lowered, a row deleted or forged —
// is an error naming each ref and file, with the ways out. Last, the configuration must be
// the one the baseline was taken under.
func (s store) verify() error {
	s.removeStale(time.Now())
	adopted, err := s.ledger().AdoptShared()
	if err != nil {
		return err
	}
	if adopted != "" {
		fmt.Fprintf(s.log(), "hgate: %s\n", adopted)
	}
	rolled, refErr := ledger.CheckRefs(s.Repo)
	for _, r := range rolled {
		fmt.Fprintf(s.log(), "hgate: %s\n", r)
	}
	var moved *ledger.Moved
	if refErr != nil && !errors.As(refErr, &moved) {
		return refErr
	}
	recovered, err := s.ledger().Verify()
	for _, f := range recovered {
		fmt.Fprintf(s.log(), "hgate: %s: finished a write that a crash interrupted (from the ledger)\n", f)
	}
	if err := errors.Join(refErr, err); err != nil {
		return err
	}
	return measuredCheck(s).checkConfig()
}

// removeStale removes the temporary files a killed hgate (or a full disk) left — a state
// file's .NAME.tmp-* in the workspace, go-git's objects/pack/tmp_obj_* — and says so. The
// caller holds the repository lock, which every hgate that writes them holds: a file
// older than that is nobody's. Failing to remove one is not a reason to stop.
func (s store) removeStale(before time.Time) {
	ws := s.ledger().Dir()
	var all []string
	for _, d := range []struct {
		dir    string
		isTemp func(string) bool
	}{
		{s.Repo.ObjectTemps(), gitguard.IsObjectTemp},
		{ws, statefile.IsTemp},
		{filepath.Join(ws, workspace.ReceiptsDir), statefile.IsTemp},
	} {
		removed, err := statefile.RemoveStale(d.dir, d.isTemp, before)
		if err != nil {
			fmt.Fprintf(s.log(), "hgate: warning: %v\n", err)
		}
		for _, p := range removed {
			all = append(all, s.Display(p))
		}
	}
	if len(all) > 0 {
		fmt.Fprintf(s.log(), "hgate: removed %d temporary file(s) left by an hgate that was killed or ran out of disk space: %s\n", len(all), strings.Join(all, ", "))
	}
	// Private traces, clean rooms, a loop's socket folder and agent TMPDIR whose maker is
	// gone: never a running hgate's, whichever repository it serves.
	if dirs := scratch.Sweep(os.TempDir()); len(dirs) > 0 {
		fmt.Fprintf(s.log(), "hgate: removed %d temporary folder(s) left by an hgate that was killed: %s\n", len(dirs), strings.Join(dirs, ", "))
	}
}

// Verify is verify for callers outside the package (the loop, before its first agent),
// with the carried paths checked as they are in the repository, and hgate.yaml as HEAD
// has it: a human who committed a new benchmark learns it needs a new baseline before
// the loop starts.
func (e *Env) Verify() error {
	if err := (store{e}).verify(); err != nil {
		return err
	}
	if err := (measuredCheck{e}).checkHead(); err != nil {
		return err
	}
	return carry{e}.verify(e.Repo.Root())
}

// changes are state files to write, by name relative to the workspace.
type changes map[string][]byte

// add puts a state file, as marshal renders it, into the change set.
func (c changes) add(name string, marshal func() ([]byte, error)) error {
	data, err := marshal()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	c[name] = data
	return nil
}

// apply records the changes in the ledger, then writes the files.
func (s store) apply(message string, c changes) error {
	if len(c) == 0 {
		return nil
	}
	return s.commit(ledger.Update{Message: message, Files: c})
}

// commit records one state change in the ledger — files, anchor moves, carry manifest —
// then makes it on disk and in the refs.
func (s store) commit(u ledger.Update) error {
	fault.Point("apply")
	return s.ledger().Commit(u)
}

// names lists the change set's files as the repository sees them, in a stable order.
func (c changes) names(l *ledger.Ledger) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(c)) {
		out = append(out, l.Display(n))
	}
	return out
}

// RestoreState is for the loop, which trusts itself and not the agent it runs: a state
// file the agent edited, deleted or replaced is rewritten from the ledger, an anchor ref it
// moved is put back, and their names returned so the edit can be reported.
func (e *Env) RestoreState() ([]string, error) {
	rolled, err := ledger.CheckRefs(e.Repo)
	for _, r := range rolled {
		fmt.Fprintf(e.log(), "hgate: %s\n", r)
	}
	var moved *ledger.Moved
	if err != nil && !errors.As(err, &moved) {
		return nil, err
	}
	refs, err := ledger.RestoreRefs(e.Repo)
	if err != nil {
		return refs, err
	}
	l := e.ledger()
	recovered, err := l.Verify()
	var drift *ledger.Drift
	if !errors.As(err, &drift) {
		return append(refs, recovered...), err
	}
	restored, err := l.Restore()
	return append(append(refs, recovered...), restored...), err
}
