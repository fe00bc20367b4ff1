package ledger

// Anchors: the refs hgate trusts (refs/hgate/gated, the guard's base and the commit
// hgate.yaml is read from; refs/hgate/best) are kept where hgate put them. Every ledger
// commit holds, beside the state files, the file .hgate/refs saying where each anchor
// should be; the commit that moves an anchor is the commit of the state change that
// moves it (record's row, prepare's baseline), and the refs move only after the commit.
// CheckRefs compares the refs with the tip: a ref still where the tip's parent put it is
// a move a crash interrupted, finished at once; any other difference is a *Moved error.
// A ledger older than the anchors has no .hgate/refs: nothing is checked until the next
// ledger write adopts the refs as they are.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
)

// anchorRefs are every ref the ledger keeps, in the order messages list them.
var anchorRefs = []string{gitguard.GatedRef, gitguard.BestRef}

// Meta files live in the ledger's tree beside the state files; they are never written
// to the workspace (Tracked is false for them).
const (
	metaDir   = ".hgate"
	refsFile  = metaDir + "/refs"
	carryFile = metaDir + "/carry.json"
)

func isMeta(name string) bool { return name == refsFile || name == carryFile }

// refSet is where each anchor ref points (zero: absent).
type refSet map[string]plumbing.Hash

func (s refSet) marshal() []byte {
	var b bytes.Buffer
	for _, name := range anchorRefs {
		fmt.Fprintf(&b, "%s %s\n", name, s[name])
	}
	return b.Bytes()
}

func parseRefSet(data []byte) (refSet, error) {
	s := refSet{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		name, hash, ok := strings.Cut(sc.Text(), " ")
		if !ok || len(hash) != 40 || !plumbing.IsHash(hash) {
			return nil, fmt.Errorf("%s:%d: expected \"REF HASH\"", refsFile, n)
		}
		s[name] = plumbing.NewHash(hash)
	}
	return s, nil
}

// refsAt returns the anchors a ledger commit records; ok is false for a zero commit and
// for one that predates anchors.
func refsAt(repo *gitguard.Repo, commit plumbing.Hash) (s refSet, ok bool, err error) {
	if commit.IsZero() {
		return nil, false, nil
	}
	data, err := repo.FileAt(commit, refsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("ledger: %w", err)
	}
	s, err = parseRefSet(data)
	if err != nil {
		return nil, false, fmt.Errorf("ledger %s: %w", commit.String()[:7], err)
	}
	return s, true, nil
}

// currentRefs reads where the anchor refs are now.
func currentRefs(repo *gitguard.Repo) (refSet, error) {
	s := refSet{}
	for _, name := range anchorRefs {
		h, err := repo.Ref(name)
		if err != nil {
			return nil, err
		}
		s[name] = h
	}
	return s, nil
}

// MovedRef is one anchor ref that is not where the ledger last put it.
type MovedRef struct {
	Ref  string
	At   plumbing.Hash // where it is (zero: deleted)
	Want plumbing.Hash // where hgate last put it (zero: hgate never set it)

	stored string // where git keeps the ledger ref in this worktree (gitguard.Repo.RefName)
}

func (m MovedRef) phrase() string {
	switch {
	case m.At.IsZero():
		return fmt.Sprintf("%s: deleted; hgate last put it at %s", m.Ref, shortHash(m.Want))
	case m.Want.IsZero():
		return fmt.Sprintf("%s: set to %s; hgate never set it", m.Ref, shortHash(m.At))
	}
	return fmt.Sprintf("%s: moved to %s; hgate last put it at %s", m.Ref, shortHash(m.At), shortHash(m.Want))
}

// putBack is the git command that puts the ref where hgate left it.
func (m MovedRef) putBack() string {
	if m.Want.IsZero() {
		return "git update-ref -d " + m.stored
	}
	return fmt.Sprintf("git update-ref %s %s", m.stored, m.Want)
}

func shortHash(h plumbing.Hash) string { return h.String()[:12] }

// Moved is the error CheckRefs returns when an anchor ref was moved outside hgate.
type Moved struct {
	Refs []MovedRef
}

// Expected returns where hgate last put ref, when the error names it.
func (m *Moved) Expected(ref string) (plumbing.Hash, bool) {
	for _, r := range m.Refs {
		if r.Ref == ref {
			return r.Want, true
		}
	}
	return plumbing.ZeroHash, false
}

func (m *Moved) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hgate's trust anchors were moved outside hgate (the ledger %s records where hgate last put them):", gitguard.LedgerRef)
	var cmds []string
	for _, r := range m.Refs {
		b.WriteString("\n  " + r.phrase())
		cmds = append(cmds, r.putBack())
	}
	fmt.Fprintf(&b, "\nrun `hgate state rebase` to take the current HEAD as the new gated commit on purpose, or put them back: %s", strings.Join(cmds, "; "))
	return b.String()
}

// CheckRefs compares the anchor refs with where the ledger tip put them. A ref still
// where the tip's parent put it is a move a crash interrupted between the ledger commit
// and the ref update: it is finished, and a line saying so returned. Any other
// difference is a *Moved error. A ledger that predates anchors checks nothing. Only a
// caller holding the repository lock may call it: it writes.
func CheckRefs(repo *gitguard.Repo) (rolled []string, err error) {
	pending, err := compareRefs(repo)
	for _, p := range pending {
		if merr := moveRef(repo, p.Ref, p.Want, p.At); merr != nil {
			return rolled, merr
		}
		rolled = append(rolled, fmt.Sprintf("%s: finished a move that a crash interrupted (to %s, from the ledger)", p.Ref, shortHash(p.Want)))
	}
	return rolled, err
}

// ReadRefs is CheckRefs for a command that only reads: it writes nothing and takes no
// lock. A move the ledger records but the ref has not made yet — an hgate making it
// now, or one killed before it did — is no error: it is returned, for the reader to take
// the ledger's value (ExpectedRef) and leave the move to the next command that writes.
// Any other difference is a *Moved error, as for CheckRefs.
func ReadRefs(repo *gitguard.Repo) (pending []MovedRef, err error) {
	return compareRefs(repo)
}

// compareRefs returns the anchors a move is pending on (still where the tip's parent
// put them) and, as a *Moved error, any other anchor not where the tip put it.
func compareRefs(repo *gitguard.Repo) (pending []MovedRef, err error) {
	tip, want, cur, err := anchorsNow(repo)
	if err != nil || want == nil {
		return nil, err
	}
	before, hasBefore, err := parentRefs(repo, tip)
	if err != nil {
		return nil, err
	}
	var moved []MovedRef
	for _, name := range anchorRefs {
		at, w := cur[name], want[name]
		if at == w {
			continue
		}
		m := MovedRef{Ref: name, At: at, Want: w, stored: repo.RefName(name)}
		if hasBefore && before[name] == at {
			pending = append(pending, m)
			continue
		}
		moved = append(moved, m)
	}
	if len(moved) > 0 {
		return pending, &Moved{Refs: moved}
	}
	return pending, nil
}

// Pending says, for a reader, that an anchor's move is not made yet.
func (m MovedRef) Pending() string {
	return fmt.Sprintf("%s: the move to %s the ledger records is not made yet (an hgate is making it, or was killed first): read as the ledger has it; the next command that writes finishes it", m.Ref, shortHash(m.Want))
}

// parentRefs returns the anchors of the tip's parent: all absent for a root commit, ok
// false when the parent predates anchors.
func parentRefs(repo *gitguard.Repo, tip plumbing.Hash) (refSet, bool, error) {
	c, err := repo.Commit(tip)
	if err != nil {
		return nil, false, fmt.Errorf("ledger: read commit %s: %w", tip, err)
	}
	if len(c.ParentHashes) == 0 {
		return refSet{}, true, nil
	}
	return refsAt(repo, c.ParentHashes[0])
}

// RestoreRefs puts every anchor ref back where the ledger tip says and returns the names
// of those it moved.
func RestoreRefs(repo *gitguard.Repo) ([]string, error) {
	_, want, cur, err := anchorsNow(repo)
	if err != nil || want == nil {
		return nil, err
	}
	var out []string
	for _, name := range anchorRefs {
		if cur[name] != want[name] {
			if err := moveRef(repo, name, want[name], cur[name]); err != nil {
				return out, err
			}
			out = append(out, name)
		}
	}
	return out, nil
}

// ExpectedRef returns where the ledger last put an anchor ref; ok is false when the
// ledger does not record it (no ledger, or one older than anchors).
func ExpectedRef(repo *gitguard.Repo, ref string) (h plumbing.Hash, ok bool, err error) {
	tip, err := repo.Ref(gitguard.LedgerRef)
	if err != nil {
		return plumbing.ZeroHash, false, fmt.Errorf("ledger: %w", err)
	}
	s, ok, err := refsAt(repo, tip)
	if err != nil || !ok {
		return plumbing.ZeroHash, false, err
	}
	return s[ref], true, nil
}

// moveRef moves ref from old to new with compare-and-set. Someone else having moved it
// to new already (another hgate finishing an interrupted move) is success.
func moveRef(repo *gitguard.Repo, ref string, new, old plumbing.Hash) error {
	if new == old {
		return nil
	}
	err := repo.SetRef(ref, new, old)
	if errors.Is(err, gitguard.ErrRefChanged) {
		if now, rerr := repo.Ref(ref); rerr == nil && now == new {
			return nil
		}
		return fmt.Errorf("%w (it was moved while hgate was moving it; run hgate state log and hgate state restore)", err)
	}
	return err
}

// sortedRefs lists a move set's refs in a stable order.
func sortedRefs(m map[string]plumbing.Hash) []string {
	out := make([]string, 0, len(m))
	for name := range m {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// anchorsNow reads the ledger tip, where it puts the anchors, and where they are; want is
// nil when the ledger predates anchors (nothing to compare).
func anchorsNow(repo *gitguard.Repo) (tip plumbing.Hash, want, cur refSet, err error) {
	if tip, err = repo.Ref(gitguard.LedgerRef); err != nil {
		return tip, nil, nil, fmt.Errorf("ledger: %w", err)
	}
	want, ok, err := refsAt(repo, tip)
	if err != nil || !ok {
		return tip, nil, nil, err
	}
	cur, err = currentRefs(repo)
	if err != nil {
		return tip, nil, nil, err
	}
	return tip, want, cur, nil
}

// AnchorsAt returns where a ledger commit says each anchor ref is (zero: absent); ok is
// false for a commit that predates anchors. The loop checks its refs snapshot with it.
func AnchorsAt(repo *gitguard.Repo, commit plumbing.Hash) (anchors map[string]plumbing.Hash, ok bool, err error) {
	s, ok, err := refsAt(repo, commit)
	return s, ok, err
}

// Anchors lists the anchor refs.
func Anchors() []string { return append([]string(nil), anchorRefs...) }
