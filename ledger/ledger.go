// Package ledger keeps hgate's own state in git, so an agent that runs as the
// same user cannot silently forge it.
//
// The gate's state lives in the gitignored workspace folder, where the file
// guard cannot see it: an agent could empty suite.json, lower the threshold,
// delete the best row of results.tsv or forge a receipt. The ledger is a
// second copy of those files kept as commits on refs/hgate/ledger (blob →
// tree → commit, the ref moved with compare-and-set). The tracked files,
// relative to the workspace, are suite.json, results.tsv, train_results.json,
// split.json, baseline.json (the gate's record of the baseline), harness.json (which of
// the agent's tools are qualified) and every receipts/*.json. learnings.md, traces/ and runs/ are
// not tracked: the agent may write learnings.
//
// Every write of state goes through Commit, which records the ledger commit
// first and only then writes the files (atomically, via statefile). Every
// command starts with Verify, which compares the files on disk with the
// ledger tip:
//
//   - equal: nothing to do;
//   - a file still holding the content it had before the tip commit (or
//     absent, as it was then) is a write interrupted by a crash between the
//     ledger commit and the file write: it is rolled forward from the tip
//     and reported in the list Verify returns. Only what a crash can leave
//     counts: Commit makes the workspace folder first and writes in name
//     order, so a missing workspace folder, or a file the tip changed that
//     is still as before while a file after it holds the tip's content, was
//     changed (deleted) outside hgate and is drift;
//   - anything else is a *Drift error naming each file and what changed,
//     with two ways out for a human: `hgate state restore` (Restore: rewrite
//     the files from the ledger) or `hgate state accept` (Accept: take the
//     files as they are, recorded in the ledger as a manual edit).
//
// Rolling forward never adopts what is on disk, it rewrites the tip's
// content: an agent that puts back a file's previous content, or deletes a
// file the tip added (indistinguishable from a crash before its first
// write), just sees the file rewritten, with the name reported.
//
// A state file must be a regular file: a symlink in its place is drift, and
// Accept refuses it. With no ledger ref, a workspace without state files is
// simply new; one with state files is drift (the ref was deleted, or the
// files predate the ledger), and Accept adopts them.
//
// Names returned by Verify, Restore and Accept are slash paths relative to
// the repository root ("workspace/suite.json"), ready to print; names in
// Commit's changes and in Change.File are relative to the workspace.
//
// Beside the state files, each ledger commit holds where hgate last put its
// trust anchors, refs/hgate/gated and refs/hgate/best (.hgate/refs, see
// anchors.go), and the accepted manifest of the clean room's carried paths
// (.hgate/carry.json, see carry.go). Neither is ever written to the
// workspace.
//
// Limits: the ledger catches edits to the workspace files, moves of the
// anchors and changes of the carried files. An agent that also writes a
// matching commit to refs/hgate/ledger with git plumbing, or runs hgate's
// own `state accept`, `state rebase` or `prepare --reset`, is not caught here: in manual mode
// nothing tells its commit from a human's. The ledger's history (`hgate
// state log`) shows every commit, each signed "hgate <hgate@localhost>";
// the loop keeps refs/hgate/* across the agent's phase.
//
// The ledger detects; it does not lock. Callers serialize hgate commands
// with the repository lock; the compare-and-set only guarantees that two
// writers never lose each other's commit.
package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/workspace"
)

// files are the tracked state files other than receipts.
var files = []string{workspace.Baseline, workspace.Harness, workspace.Results, workspace.Split, workspace.Suite, workspace.TrainResults}

// receiptsDir holds one receipt per gated tree.
const receiptsDir = workspace.ReceiptsDir

// Tracked reports whether a slash path relative to the workspace is a state
// file the ledger keeps: one of the fixed files, or receipts/NAME.json
// (directly in receipts/, not hidden, like the shell glob receipts/*.json).
func Tracked(name string) bool {
	for _, f := range files {
		if name == f {
			return true
		}
	}
	base, ok := strings.CutPrefix(name, receiptsDir+"/")
	return ok && isReceiptName(base)
}

func isReceiptName(base string) bool {
	return base != "" && !strings.ContainsAny(base, "/\\") && !strings.HasPrefix(base, ".") &&
		strings.HasSuffix(base, ".json") && len(base) > len(".json")
}

// Ledger is the state of one workspace as kept on Ref.
type Ledger struct {
	repo   *gitguard.Repo
	dir    string // workspace directory, absolute
	prefix string // workspace path relative to the repository root, with a trailing slash

	recorded plumbing.Hash // the commit record made last
}

// Open returns the ledger of the workspace at workspaceDir in repo. It reads
// nothing yet.
func Open(repo *gitguard.Repo, workspaceDir string) *Ledger {
	dir, err := filepath.Abs(workspaceDir)
	if err != nil {
		dir = filepath.Clean(workspaceDir)
	}
	prefix := filepath.ToSlash(dir) + "/"
	if rel, err := filepath.Rel(repo.Root(), dir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		prefix = filepath.ToSlash(rel) + "/"
		if rel == "." {
			prefix = ""
		}
	}
	return &Ledger{repo: repo, dir: dir, prefix: prefix}
}

// Dir returns the absolute workspace directory.
func (l *Ledger) Dir() string { return l.dir }

// Display returns how messages name a workspace file: its slash path
// relative to the repository root.
func (l *Ledger) Display(name string) string { return l.prefix + name }

// Tip returns the ledger's newest commit, or the zero hash when there is no
// ledger yet.
func (l *Ledger) Tip() (plumbing.Hash, error) { return l.repo.Ref(gitguard.LedgerRef) }

// File returns a state file as the tip holds it; nil when it holds none.
func (l *Ledger) File(name string) ([]byte, error) {
	tip, err := l.Tip()
	if err != nil || tip.IsZero() {
		return nil, err
	}
	return l.fileAt(tip, name)
}

// Log returns up to max ledger commits, newest first (max <= 0: all). The
// Changed paths are relative to the workspace.
func (l *Ledger) Log(max int) ([]gitguard.RefEntry, error) {
	return l.repo.LogRef(gitguard.LedgerRef, max)
}

// Update is one change of hgate's state, recorded as one ledger commit.
type Update struct {
	// Message is one line saying what hgate did, e.g. "gate: tree 1a2b3c4 pass, promoted 2".
	Message string
	// Files are state files relative to the workspace; a nil value deletes one.
	Files map[string][]byte
	// Refs are anchor refs (GatedRef, BestRef) to move, once the files are written.
	Refs map[string]plumbing.Hash
	// Carry, when set, becomes the accepted manifest of clean_room.carry.
	Carry *Manifest
	// BeforeRefs, when set, runs between the file writes and the ref moves (a
	// caller's crash point for tests).
	BeforeRefs func()
}

// Commit is the way hgate writes state. It records u in one ledger commit —
// state files (the tip's with u.Files applied, a nil value deleting one), where
// the anchor refs now belong, the carry manifest — then writes the files, then
// moves the refs. A crash anywhere leaves the intent in the ledger: the next
// Verify finishes the file writes and the next CheckRefs the ref moves. A ledger
// older than anchors first adopts the refs where they are (in a commit of its
// own when u moves one, so the move can be finished after a crash).
func (l *Ledger) Commit(u Update) error {
	for name := range u.Files {
		if isMeta(name) {
			return fmt.Errorf("ledger: %s: not a state file", name)
		}
	}
	files, cur, err := l.commitFiles(u)
	if err != nil {
		return err
	}
	if len(u.Files) > 0 {
		// The folder exists before any commit that writes into it, and hgate never removes
		// it: Verify takes a missing workspace for a removal, never for a crash.
		if err := os.MkdirAll(l.dir, 0o755); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
	}
	if err := l.record(u.Message, files); err != nil {
		return err
	}
	fault.Point("ledger-recorded")
	if err := l.write(u.Files); err != nil {
		return err
	}
	if len(files) > 0 {
		// An event (no file changed) proves nothing about an earlier write: a crash's
		// files may still be unwritten below it.
		l.markWritten(l.recorded)
	}
	if u.BeforeRefs != nil {
		u.BeforeRefs()
	}
	for _, name := range sortedRefs(u.Refs) {
		if err := moveRef(l.repo, name, u.Refs[name], cur[name]); err != nil {
			return fmt.Errorf("%w (the ledger holds where it belongs: the next hgate command finishes the move)", err)
		}
	}
	return nil
}

// commitFiles is what u's ledger commit holds: u's files, the anchor refs as they will
// be and the carry manifest; and where the anchor refs are now. A ledger whose tip holds
// no refs yet takes them where they are, in a commit of its own first when u moves one.
func (l *Ledger) commitFiles(u Update) (map[string][]byte, refSet, error) {
	tip, err := l.Tip()
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: %w", err)
	}
	refs, have, err := refsAt(l.repo, tip)
	if err != nil {
		return nil, nil, err
	}
	cur, err := currentRefs(l.repo)
	if err != nil {
		return nil, nil, err
	}
	files := maps.Clone(u.Files)
	if files == nil {
		files = map[string][]byte{}
	}
	if !have {
		refs = maps.Clone(cur)
		if len(u.Refs) > 0 && !tip.IsZero() {
			if err := l.record("adopt "+strings.Join(anchorRefs, " and ")+" where they are (the first ledger write to record them)",
				map[string][]byte{refsFile: refs.marshal()}); err != nil {
				return nil, nil, err
			}
		} else {
			files[refsFile] = refs.marshal()
		}
	}
	if len(u.Refs) > 0 {
		refs = maps.Clone(refs)
		for _, name := range sortedRefs(u.Refs) {
			if !slices.Contains(anchorRefs, name) {
				return nil, nil, fmt.Errorf("ledger: %s is not an anchor ref (expected %s)", name, strings.Join(anchorRefs, " or "))
			}
			refs[name] = u.Refs[name]
		}
		files[refsFile] = refs.marshal()
	}
	if u.Carry != nil {
		data, err := u.Carry.marshal()
		if err != nil {
			return nil, nil, err
		}
		files[carryFile] = data
	}
	return files, cur, nil
}

// record is Commit's first step: the ledger commit.
func (l *Ledger) record(message string, changes map[string][]byte) error {
	message = oneLine(message)
	if message == "" {
		return errors.New("ledger: a commit needs a message saying what hgate did")
	}
	var bad []string
	for name := range changes {
		if !Tracked(name) && !isMeta(name) {
			bad = append(bad, name)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("ledger: %s: not a state file (expected %s or receipts/NAME.json)",
			strings.Join(bad, ", "), strings.Join(files, ", "))
	}
	tip, err := l.repo.CommitFiles(gitguard.LedgerRef, changes, message)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	l.recorded = tip
	return nil
}

// write is Commit's second step: the workspace files, in name order.
func (l *Ledger) write(changes map[string][]byte) error {
	names := make([]string, 0, len(changes))
	for name := range changes {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		if i == 1 {
			fault.Point("ledger-partial")
		}
		if err := l.writeFile(name, changes[name]); err != nil {
			return fmt.Errorf("%w (the ledger holds the new content: the next hgate command finishes the write)", err)
		}
	}
	return nil
}

// writeFile writes (or, for nil data, removes) one workspace file.
func (l *Ledger) writeFile(name string, data []byte) error {
	full := l.path(name)
	if data == nil {
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", l.Display(name), err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", l.Display(name), err)
	}
	return statefile.WriteAtomic(full, data)
}

func (l *Ledger) path(name string) string { return filepath.Join(l.dir, filepath.FromSlash(name)) }

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Verify compares the workspace's state files with the ledger tip. Files
// left behind by a crash inside Commit are rolled forward and returned (as
// repository-relative paths); any other difference is a *Drift error. The
// roll-forward happens even when other files drift: it only ever writes
// what hgate itself recorded.
func (l *Ledger) Verify() (recovered []string, err error) {
	tip, err := l.Tip()
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	d, err := l.scan()
	if err != nil {
		return nil, err
	}
	if tip.IsZero() {
		if d.empty() {
			return nil, nil
		}
		return nil, l.missingDrift(d)
	}
	want, err := l.repo.BlobHashesAt(tip)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	diffs := compare(d, want)
	if len(diffs) == 0 {
		l.markWritten(tip)
		return nil, nil
	}
	// A commit that changed no file (an event, such as a look at the final split, which a
	// read-only command may add while a crash's write is unfinished) is not the write the
	// disk may be behind: the crash's is the newest commit that changed the tree.
	changed, events, err := l.lastChange(tip)
	if err != nil {
		return nil, err
	}
	if w := l.written(); w == changed || slices.Contains(events, w) {
		// Every file of the tip was written: nothing here is a crash's.
		dr := l.drift(tip, d, diffs)
		dr.Gone = d.empty() && holdsState(want)
		return nil, dr
	}
	return l.rollForward(tip, changed, d, want, diffs)
}

// rollForward finishes the write a crash inside Commit left half done: each difference
// that commit (changed) had not written yet, as its write order shows, is written from
// the tip and returned; any other difference is a *Drift error, after those repairs.
func (l *Ledger) rollForward(tip, changed plumbing.Hash, d *disk, want map[string]plumbing.Hash, diffs []Change) (recovered []string, err error) {
	parent, err := l.parentOf(changed)
	if err != nil {
		return nil, err
	}
	before, err := l.repo.BlobHashesAt(parent)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	dirGone := false
	if _, err := os.Lstat(l.dir); errors.Is(err, fs.ErrNotExist) {
		dirGone = true
	}
	order := writeOrder(d, want, before)
	var rest []Change
	var roll []Change
	for _, c := range diffs {
		if !dirGone && interrupted(c, d, before) && !writtenAfter(c.File, order) {
			roll = append(roll, c)
		} else {
			rest = append(rest, c)
		}
	}
	for _, c := range roll {
		if err := l.fix(tip, c); err != nil {
			return recovered, err
		}
		recovered = append(recovered, l.Display(c.File))
	}
	if len(rest) > 0 {
		dr := l.drift(tip, d, rest)
		dr.Gone = d.empty() && holdsState(want)
		return recovered, dr
	}
	l.markWritten(tip)
	return recovered, nil
}

// holdsState reports whether a ledger tree holds any state file.
func holdsState(tree map[string]plumbing.Hash) bool {
	for name := range tree {
		if Tracked(name) {
			return true
		}
	}
	return false
}

// written is one state file the tip commit changed, in the order Commit writes them
// (sorted by name), and whether the workspace already holds the tip's version.
type written struct {
	file string
	done bool
}

// writeOrder lists the state files the tip changed from its parent, sorted as Commit
// writes them, each marked done when the disk holds the tip's content (or, for a file
// the tip deleted, no file).
func writeOrder(d *disk, want, before map[string]plumbing.Hash) []written {
	var out []written
	seen := map[string]bool{}
	for _, m := range []map[string]plumbing.Hash{want, before} {
		for name := range m {
			if seen[name] || !Tracked(name) {
				continue
			}
			seen[name] = true
			w, inTip := want[name]
			b, inParent := before[name]
			if inTip == inParent && w == b {
				continue
			}
			f, onDisk := d.files[name]
			done := !inTip && !onDisk || inTip && onDisk && f.kind == kindRegular && f.hash == w
			out = append(out, written{file: name, done: done})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].file < out[j].file })
	return out
}

// writtenAfter reports whether a file after name in the tip's write order already
// holds its new content: a crash stops the writes at one point, so name was not left
// behind by a crash but changed back (or deleted) afterwards.
func writtenAfter(name string, order []written) bool {
	for _, w := range order {
		if w.file > name && w.done {
			return true
		}
	}
	return false
}

// interrupted reports whether a difference is exactly what a crash between
// the ledger commit and the file write leaves: the file as it was in the
// tip's parent.
func interrupted(c Change, d *disk, before map[string]plumbing.Hash) bool {
	if c.File == receiptsDir || d.receiptsKind != kindNone && strings.HasPrefix(c.File, receiptsDir+"/") {
		return false
	}
	f, onDisk := d.files[c.File]
	h, inParent := before[c.File]
	if !onDisk {
		return !inParent
	}
	return inParent && f.kind == kindRegular && f.hash == h
}

// lastChange walks back from tip over the commits whose tree is their parent's (events,
// returned newest first with tip among them when it is one) to the newest commit that
// changed a file. Bounded: past 10000 events it stops where it is.
func (l *Ledger) lastChange(tip plumbing.Hash) (changed plumbing.Hash, events []plumbing.Hash, err error) {
	c := tip
	for range 10000 {
		cm, err := l.repo.Commit(c)
		if err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("ledger: read commit %s: %w", c, err)
		}
		if len(cm.ParentHashes) == 0 {
			return c, events, nil
		}
		parent, err := l.repo.Commit(cm.ParentHashes[0])
		if err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("ledger: read commit %s: %w", cm.ParentHashes[0], err)
		}
		if parent.TreeHash != cm.TreeHash {
			return c, events, nil
		}
		events = append(events, c)
		c = cm.ParentHashes[0]
	}
	return c, events, nil
}

func (l *Ledger) parentOf(tip plumbing.Hash) (plumbing.Hash, error) {
	c, err := l.repo.Commit(tip)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("ledger: read commit %s: %w", tip, err)
	}
	if len(c.ParentHashes) == 0 {
		return plumbing.ZeroHash, nil
	}
	return c.ParentHashes[0], nil
}

// Restore rewrites every file that differs from the ledger tip (removing
// state files the tip does not hold, and symlinks standing in for state
// files), puts the anchor refs back where the tip says, and returns the
// names it changed (files, then refs).
func (l *Ledger) Restore() ([]string, error) {
	tip, err := l.Tip()
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if tip.IsZero() {
		return nil, fmt.Errorf("ledger: nothing to restore from: %s does not exist (run `hgate state accept` to adopt the files as they are)", gitguard.LedgerRef)
	}
	d, err := l.scan()
	if err != nil {
		return nil, err
	}
	want, err := l.repo.BlobHashesAt(tip)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	var changed []string
	for _, c := range compare(d, want) {
		if err := l.fix(tip, c); err != nil {
			return changed, err
		}
		changed = append(changed, l.Display(c.File))
	}
	l.markWritten(tip)
	refs, err := RestoreRefs(l.repo)
	return append(changed, refs...), err
}

// fix makes one file match the tip. compare lists the receipts folder
// before the receipts in it, so a folder swapped for a symlink is replaced
// by a real one first.
func (l *Ledger) fix(tip plumbing.Hash, c Change) error {
	full := l.path(c.File)
	if c.File == receiptsDir {
		if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("restore %s: %w", l.Display(c.File), err)
		}
		return nil
	}
	if c.Kind == KindSymlink || c.Kind == KindNotRegular {
		// Whatever stands at a state file's path is not the agent's to
		// keep: a folder there goes with its content.
		if err := os.RemoveAll(full); err != nil {
			return fmt.Errorf("restore %s: %w", l.Display(c.File), err)
		}
	}
	if c.Kind == KindAdded {
		return l.writeFile(c.File, nil)
	}
	data, err := l.repo.FileAt(tip, c.File)
	if errors.Is(err, fs.ErrNotExist) {
		return l.writeFile(c.File, nil)
	}
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return l.writeFile(c.File, data)
}

// Accept records the state files as they are on disk as the new ledger tip,
// with the message "manual edit: FILES" (and " (by WHO)" when who is set),
// and returns the names it recorded. Without a ledger it adopts the files.
// A state file that is not a regular file is refused (nothing is accepted).
// A changed, added or removed receipt is never accepted — receipts are the
// gate's verdicts, not a human's to write —: the other files are, and their
// names returned with an error naming the receipts. Nothing to accept
// returns no names and makes no commit.
//
// check, when set, first reads every file Accept would record (name relative to
// the workspace): a file the commands could not read is never recorded. Any
// problem refuses the whole accept, each named by check (file, line, field), and
// nothing is recorded.
func (l *Ledger) Accept(who string, check func(name string, data []byte) error) ([]string, error) {
	d, err := l.scan()
	if err != nil {
		return nil, err
	}
	if err := l.refuseIrregular(d); err != nil {
		return nil, err
	}
	tip, err := l.Tip()
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	want, err := l.repo.BlobHashesAt(tip)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	changes, receipts := l.acceptable(d, tip, want)
	// A receipt is the gate's verdict on a tree: only hgate gate writes one, and accepting
	// an edited one would let record keep a tree the gate never passed. The other files
	// are accepted all the same; the receipts are named in the error.
	var refused error
	if len(receipts) > 0 {
		refused = fmt.Errorf("ledger: not accepted: receipts are the gate's own verdicts, which only hgate gate writes:\n  %s\nrun `hgate state restore` to put them back",
			strings.Join(receipts, "\n  "))
	}
	if len(changes) == 0 && !tip.IsZero() {
		return nil, refused
	}
	if err := checkAccepted(changes, check); err != nil {
		return nil, err
	}
	names, msg := l.acceptMessage(changes, who)
	if err := l.addRefsFile(tip, changes); err != nil {
		return nil, err
	}
	if _, err := l.repo.CommitFiles(gitguard.LedgerRef, changes, msg); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return names, refused
}

// refuseIrregular refuses an accept when a state file (or the receipts folder) is not
// a regular file (a folder): nothing is accepted.
func (l *Ledger) refuseIrregular(d *disk) error {
	var bad []string
	if d.receiptsKind != kindNone {
		bad = append(bad, fmt.Sprintf("%s is %s", l.Display(receiptsDir), kindPhrase(d.receiptsKind)))
	}
	for _, name := range d.names() {
		if k := d.files[name].kind; k != kindRegular {
			bad = append(bad, fmt.Sprintf("%s is %s", l.Display(name), kindPhrase(k)))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("ledger: cannot accept: %s; a state file must be a regular file (replace it, or run `hgate state restore`)", strings.Join(bad, "; "))
	}
	return nil
}

// acceptable splits the differences between the disk and the tip into the files to
// record (nil data: removed) and the receipts that changed, which never are (each
// described for the error).
func (l *Ledger) acceptable(d *disk, tip plumbing.Hash, want map[string]plumbing.Hash) (map[string][]byte, []string) {
	changes := map[string][]byte{}
	var receipts []string
	for _, c := range compare(d, want) {
		if !tip.IsZero() && (c.File == receiptsDir || strings.HasPrefix(c.File, receiptsDir+"/")) {
			if old, err := l.repo.FileAt(tip, c.File); err == nil && c.Kind == KindModified {
				c.Detail = describe(c.File, old, d.files[c.File].data)
			}
			receipts = append(receipts, l.Display(c.File)+": "+c.phrase())
			continue
		}
		if f, ok := d.files[c.File]; ok {
			changes[c.File] = f.data
		} else {
			changes[c.File] = nil
		}
	}
	return changes, receipts
}

// checkAccepted reads every file to record with check (when set): any problem refuses
// the whole accept, each named.
func checkAccepted(changes map[string][]byte, check func(name string, data []byte) error) error {
	if check == nil {
		return nil
	}
	var bad []error
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		if data := changes[name]; data != nil {
			if err := check(name, data); err != nil {
				bad = append(bad, err)
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w\nnothing was accepted: hgate could not read the file(s) as they are; fix them, or run `hgate state restore` to rewrite them from the ledger", errors.Join(bad...))
	}
	return nil
}

// acceptMessage is the names accepted, as displayed and sorted, and the ledger commit's
// message naming them and who accepted them.
func (l *Ledger) acceptMessage(changes map[string][]byte, who string) ([]string, string) {
	names := make([]string, 0, len(changes))
	for name := range changes {
		names = append(names, l.Display(name))
	}
	sort.Strings(names)
	msg := "manual edit: " + listNames(names, 10)
	if len(names) == 0 {
		msg = "manual edit: adopt an empty workspace"
	}
	if who = oneLine(who); who != "" {
		msg += " (by " + who + ")"
	}
	return names, msg
}

// addRefsFile adds the anchors' current places to changes when the tip does not hold
// them yet (a ledger from before they were kept there, or none).
func (l *Ledger) addRefsFile(tip plumbing.Hash, changes map[string][]byte) error {
	if _, have, err := refsAt(l.repo, tip); err != nil {
		return err
	} else if !have {
		cur, err := currentRefs(l.repo)
		if err != nil {
			return err
		}
		changes[refsFile] = cur.marshal()
	}
	return nil
}

// listNames joins names, eliding after max so a message stays one short line.
func listNames(names []string, max int) string {
	if len(names) <= max {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:max], ", "), len(names)-max)
}

// compare lists the differences between the disk and the tip's blob hashes,
// sorted by file ("receipts" sorts before "receipts/...").
func compare(d *disk, want map[string]plumbing.Hash) []Change {
	var out []Change
	if d.receiptsKind != kindNone {
		kind := KindNotRegular
		if d.receiptsKind == kindSymlink {
			kind = KindSymlink
		}
		out = append(out, Change{File: receiptsDir, Kind: kind})
	}
	for name, f := range d.files {
		h, ok := want[name]
		switch {
		case f.kind == kindSymlink:
			out = append(out, Change{File: name, Kind: KindSymlink, inLedger: ok})
		case f.kind != kindRegular:
			out = append(out, Change{File: name, Kind: KindNotRegular, inLedger: ok})
		case !ok:
			out = append(out, Change{File: name, Kind: KindAdded})
		case f.hash != h:
			out = append(out, Change{File: name, Kind: KindModified, inLedger: true})
		}
	}
	for name := range want {
		if _, ok := d.files[name]; !ok && Tracked(name) {
			out = append(out, Change{File: name, Kind: KindDeleted, inLedger: true})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].File < out[j].File })
	return out
}
