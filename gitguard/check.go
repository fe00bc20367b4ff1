package gitguard

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/gitguard/internal/walk"
	"github.com/hgate/hgate/internal/fsafe"
)

// Violation is one path changed outside the allowlist, or a change the
// guard refuses even on an allowed path.
type Violation struct {
	Path   string `json:"path"`
	Kind   string `json:"kind"` // modified, added, deleted, renamed, mode, type, untracked, history
	Detail string `json:"detail,omitempty"`
	Hint   string `json:"hint"` // how to revert, e.g. "git checkout HEAD -- benchmark.py"
}

// layer is a path's entry in one place: base tree, HEAD tree, index or disk.
type layer struct {
	present bool
	mode    filemode.FileMode
	hash    plumbing.Hash
	huge    int64 // the size of a file over the bound, never read (hash zero); 0 otherwise
	// unreadable: a regular file its owner may not read (its mode changed), never read (hash zero)
	unreadable bool
	// hardlink: an untracked regular file with more than one link (its other name may be
	// outside the worktree, where the agent may not read), never read (hash zero)
	hardlink bool
	// long: an untracked path longer than MaxPathBytes, which a clean room could not hold
	// (it writes the path under its own folder, and the system opens no name past
	// PATH_MAX), never read
	long bool
}

// MaxPathBytes bounds a new path Step 0 lets through: 1024 bytes (macOS's PATH_MAX), so
// that the path under a clean room's folder stays within Linux's 4096. A longer one (a
// tree thousands of folders deep) would stop the gate that reads or materializes it.
const MaxPathBytes = 1024

func (a layer) same(b layer) bool {
	if a.present != b.present {
		return false
	}
	return !a.present || (a.mode == b.mode && a.hash == b.hash)
}

func fromEntry(e objstore.Entry) layer {
	if e.Mode == 0 {
		return layer{}
	}
	return layer{present: true, mode: e.Mode, hash: e.Hash}
}

// pathState is everything known about one path that differs somewhere.
type pathState struct {
	path       string
	b, h, i, w layer
	idx        int  // first index entry for path, or -1
	unmerged   bool // the index holds conflict stages
	untracked  bool // w comes from the untracked walk
	nested     bool // w is a directory holding a repository
}

// state gathers the four layers of every path that differs in any of them.
type state struct {
	s     *snapshot
	w     *walk.Result
	paths map[string]*pathState
	view  *linkView // built for the first symlink judged
}

func (s *snapshot) state() (*state, error) {
	w, err := s.walk()
	if err != nil {
		return nil, err
	}
	st := &state{s: s, w: w, paths: map[string]*pathState{}}
	for p := range s.baseHead {
		st.add(p)
	}
	for p := range s.headIndex {
		st.add(p)
	}
	es := s.idx.Entries
	for k := range es {
		e := &es[k]
		ws := &w.WT[k]
		if e.Stage != 0 || e.IntentToAdd || !ws.Present || ws.Mode != e.FileMode() || ws.Hash != e.Hash {
			st.add(e.Path)
		}
	}
	for _, u := range w.Untracked {
		ps := st.add(u.Path)
		ps.untracked = true
		ps.w = layer{present: true, mode: u.Mode, unreadable: u.Unreadable}
		ps.nested = u.Nested
	}
	for _, ps := range st.paths {
		if err := st.fill(ps); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// unread reports whether the walk left the layer's file unread: over the size bound,
// past the path bound, or one its owner may not read.
func (l layer) unread() bool { return l.huge > 0 || l.long || l.unreadable }

func (st *state) add(p string) *pathState {
	ps, ok := st.paths[p]
	if !ok {
		ps = &pathState{path: p, idx: -1}
		st.paths[p] = ps
	}
	return ps
}

func (st *state) fill(ps *pathState) error {
	s := st.s
	p := ps.path
	if k := s.entryIndex(p); k >= 0 {
		ps.idx = k
		e := &s.idx.Entries[k]
		switch {
		case e.Stage != 0:
			ps.unmerged = true
		case !e.IntentToAdd:
			ps.i = layer{present: true, mode: e.FileMode(), hash: e.Hash}
		}
		ws := st.w.WT[k]
		ps.w = layer{present: ws.Present, mode: ws.Mode, hash: ws.Hash, huge: st.w.Huge[k], unreadable: ws.Unreadable, hardlink: ws.Hardlink}
		ps.nested = ws.Nested
	}
	if c, ok := s.headIndex[p]; ok {
		ps.h = fromEntry(c.From)
	} else {
		ps.h = ps.i
	}
	if c, ok := s.baseHead[p]; ok {
		ps.b = fromEntry(c.From)
	} else {
		ps.b = ps.h
	}
	switch {
	case ps.untracked && len(p) > MaxPathBytes:
		ps.w.long = true // never opened: past PATH_MAX, it could not be
	case ps.untracked && ps.w.mode == filemode.Regular:
		st.untrackedFacts(ps)
	}
	if ps.untracked && !ps.w.unread() {
		// Only a path that exists elsewhere needs its content compared.
		if !ps.nested && (ps.b.present || ps.h.present || ps.i.present) {
			if err := st.hashUntracked(ps); err != nil {
				return err
			}
		}
	}
	return nil
}

// untrackedFacts: the walk found the untracked file ps by name only; its size, mode and
// links (looked at through fsafe, never through a link) decide whether it may be read.
func (st *state) untrackedFacts(ps *pathState) {
	root, err := st.s.r.openRoot()
	if err != nil {
		return
	}
	defer root.Close()
	fi, err := root.Lstat(ps.path)
	switch {
	case err != nil || !fi.Mode().IsRegular():
	case fi.Size() > st.s.maxFile:
		ps.w.huge = fi.Size()
	case fi.Mode()&0o400 == 0:
		ps.w.unreadable = true // a mode change git cannot record: refused, never read
	case linkCount(fi) > 1:
		ps.w.hardlink = true // its other name may be outside the worktree: refused, never read
	}
}

func (st *state) hashUntracked(ps *pathState) error {
	if ps.w.mode == filemode.Empty {
		return nil // a special file has no content to compare, and a fifo would block
	}
	dir, err := st.s.r.openRoot()
	if err != nil {
		return err
	}
	defer dir.Close()
	if ps.w.mode == filemode.Symlink {
		ps.w.hash, _, err = walk.HashLink(dir, ps.path)
	} else {
		var fi os.FileInfo
		if fi, err = dir.Lstat(ps.path); err == nil && fi.Mode()&0o100 != 0 {
			ps.w.mode = filemode.Executable
		}
		if err == nil && fi.Mode()&0o400 == 0 {
			ps.w.unreadable = true
			return nil
		}
		if err == nil {
			ps.w.hash, err = walk.HashFile(dir, ps.path, st.s.maxFile)
		}
		// A hard link (a file with another name, maybe outside the worktree) is never
		// read: Step 0 refuses it, and the attempt keeps HEAD's entry.
		if errors.Is(err, fsafe.ErrLinked) {
			ps.w.hardlink, ps.w.hash = true, plumbing.ZeroHash
			return nil
		}
		if errors.Is(err, os.ErrPermission) {
			ps.w.unreadable, ps.w.hash = true, plumbing.ZeroHash
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("hash %s: %w", ps.path, err)
	}
	return nil
}

// Check is gate Step 0: every path that differs between the base commit and
// the candidate (HEAD, the index, the files on disk) outside opts.Allow, and
// changes refused even on allowed paths (a file turned into a symlink,
// directory or submodule; a symlink leading out of the repository; a nested
// repository). The result is sorted by path.
func (r *Repo) Check(opts Options) ([]Violation, error) {
	s, st, err := r.snapshot(opts)
	if err != nil {
		return nil, err
	}
	return violations(s, st)
}

// violations judges a snapshot: Check's answer.
func violations(s *snapshot, st *state) ([]Violation, error) {
	var out []Violation
	if s.history {
		out = append(out, Violation{
			Kind:   "history",
			Detail: fmt.Sprintf("HEAD %s does not descend from the base commit %s (%s): history was rewritten", short(s.headCommit), short(s.base), s.baseName),
			Hint:   "git reset --soft " + s.base.String(),
		})
	}
	for _, ps := range st.paths {
		if v, ok := st.judge(ps); ok {
			out = append(out, v)
		}
	}
	for _, d := range st.w.NestedDirs {
		out = append(out, Violation{
			Path:   d,
			Kind:   "type",
			Detail: "tracked directory holds a nested repository (" + d + "/.git), not walked",
			Hint:   "rm -rf " + shellQuote(d+"/.git"),
		})
	}
	st.findRenames(out)
	if err := st.explainHidden(out); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Kind < out[j].Kind
	})
	return out, nil
}

// final is the layer the change ends in: disk if it differs from the base,
// else the index, else HEAD.
func (ps *pathState) final() layer {
	switch {
	case !ps.w.same(ps.b):
		return ps.w
	case !ps.i.same(ps.b) || ps.unmerged:
		return ps.i
	}
	return ps.h
}

func (ps *pathState) changed() bool {
	return !ps.b.same(ps.h) || !ps.h.same(ps.i) || !ps.i.same(ps.w) || ps.unmerged || ps.untracked
}

// judge decides whether a path is a violation, and of what kind.
func (st *state) judge(ps *pathState) (Violation, bool) {
	if !ps.changed() {
		return Violation{}, false
	}
	notes := st.refusals(ps)
	if len(notes) == 0 && st.s.allow.Match(ps.path, false) {
		return Violation{}, false
	}
	f := ps.final()
	v := Violation{Path: ps.path, Kind: changeKind(ps, f)}
	if v.Kind == "mode" {
		notes = append([]string{fmt.Sprintf("mode %s → %s", ps.b.mode, f.mode)}, notes...)
	}
	notes = append(notes, st.indexMarks(ps)...)
	v.Detail = strings.Join(append(st.where(ps), notes...), "; ")
	v.Hint = st.hint(ps)
	return v, true
}

// refusals are the changes refused even on an allowed path, each said once, over the
// layers that differ from the base: none means the path is judged by allow alone.
func (st *state) refusals(ps *pathState) []string {
	var notes []string
	for _, l := range []layer{ps.h, ps.i, ps.w} {
		if !l.present || l.same(ps.b) {
			continue
		}
		for _, n := range st.layerRefusals(ps, l) {
			notes = appendOnce(notes, n)
		}
	}
	return notes
}

// layerRefusals are what one layer of a path holds that no allow rule lets through.
func (st *state) layerRefusals(ps *pathState, l layer) []string {
	switch {
	case l.huge > 0:
		return []string{fmt.Sprintf("a file of %d bytes, over gate.max_file_bytes (%d): not read", l.huge, st.s.maxFile)}
	case l.unreadable && l.mode == filemode.Dir:
		return []string{"a folder its owner may not read (its permissions were changed): not read"}
	case l.unreadable:
		return []string{"a file its owner may not read (its permissions were changed): not read"}
	case l.long:
		return []string{fmt.Sprintf("a path of %d bytes, over the %d a clean room can hold: not read", len(ps.path), MaxPathBytes)}
	case l.hardlink:
		return []string{"a hard link (a file with another name, maybe outside the worktree): not read"}
	case l.mode == filemode.Submodule:
		return []string{"submodule (gitlink) added or changed"}
	case l.mode == filemode.Dir && ps.nested:
		return []string{"nested repository, not walked"}
	case l.mode == filemode.Dir:
		return []string{"file became a directory"}
	case l.mode == filemode.Empty:
		return []string{"not a regular file or symlink"}
	case l.mode == filemode.Symlink:
		return st.symlinkRefusals(ps, l)
	}
	return nil
}

// symlinkRefusals: a symlink where the base had another kind of file, and a link whose
// target leads out of the repository, into the workspace or through another link.
func (st *state) symlinkRefusals(ps *pathState, l layer) []string {
	var notes []string
	if ps.b.present && ps.b.mode != filemode.Symlink {
		notes = append(notes, objstore.ModeKind(ps.b.mode)+" became a symlink")
	}
	if t, ok := st.linkTarget(ps, l); ok {
		if st.view == nil {
			st.view = st.linkViewOf()
		}
		if why := st.view.resolveLink(ps.path, t, st.s.workspace); why != "" {
			notes = append(notes, fmt.Sprintf("symlink to %s %s", t, why))
		}
	}
	return notes
}

// changeKind names how the path's final layer f differs from the base.
func changeKind(ps *pathState, f layer) string {
	switch {
	case !ps.b.present && f.present && !ps.h.present && !ps.i.present && !ps.unmerged:
		return "untracked"
	case !ps.b.present && f.present:
		return "added"
	case ps.b.present && !f.present:
		return "deleted"
	case ps.b.present && f.present && kindOf(ps.b.mode) != kindOf(f.mode):
		return "type"
	case ps.b.present && f.present && ps.b.hash == f.hash && ps.b.mode != f.mode:
		return "mode"
	}
	return "modified"
}

// where says in which of git's layers the path changed: committed, staged, on disk.
func (st *state) where(ps *pathState) []string {
	var where []string
	if !ps.b.same(ps.h) {
		where = append(where, "committed since "+st.s.baseName)
	}
	if ps.unmerged {
		where = append(where, "unmerged in the index")
	} else if !ps.h.same(ps.i) {
		where = append(where, "staged")
	}
	if (ps.i.present || ps.unmerged) && !ps.i.same(ps.w) {
		where = append(where, "not staged")
	}
	return where
}

// indexMarks are the index entry's flags that hide a change from git's own commands.
func (st *state) indexMarks(ps *pathState) []string {
	if ps.idx < 0 {
		return nil
	}
	var notes []string
	e := &st.s.idx.Entries[ps.idx]
	if e.AssumeValid {
		notes = append(notes, "index marks it assume-unchanged")
	}
	if e.SkipWorktree {
		notes = append(notes, "index marks it skip-worktree")
	}
	if e.IntentToAdd {
		notes = append(notes, "index marks it intent-to-add")
	}
	return notes
}

func appendOnce(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

// kindOf groups modes whose change is a type change.
func kindOf(m filemode.FileMode) filemode.FileMode {
	if m == filemode.Executable || m == filemode.Deprecated {
		return filemode.Regular
	}
	return m
}

// linkTarget reads a symlink's target from the object database or, for the
// disk layer, from the link itself; ok is false when the target is the
// base's (an unchanged link is never judged).
func (st *state) linkTarget(ps *pathState, l layer) (string, bool) {
	if ps.b.present && ps.b.mode == filemode.Symlink && ps.b.hash == l.hash && !l.hash.IsZero() {
		return "", false
	}
	if l == ps.w {
		if root, err := st.s.r.openRoot(); err == nil {
			t, err := root.Readlink(ps.path)
			root.Close()
			if err == nil {
				return t, true
			}
		}
	}
	data, err := st.s.r.objects().Blob(l.hash)
	if err != nil {
		// An unreadable target cannot be vouched for.
		return "(unreadable)", true
	}
	return string(data), true
}

// hint says how to put a path back to the base.
func (st *state) hint(ps *pathState) string {
	s := st.s
	q := shellQuote(ps.path)
	var steps []string
	if ps.w.present && (ps.w.mode == filemode.Dir || ps.nested) && !(ps.b.present && ps.b.mode == filemode.Submodule) {
		steps = append(steps, "rm -rf "+q)
	}
	if ps.b.present {
		steps = append(steps, "git checkout "+s.baseName+" -- "+q)
		// With core.fileMode=false checkout may keep a wrong executable bit.
		if ps.b.mode == filemode.Regular && ps.w.mode == filemode.Executable {
			steps = append(steps, "chmod -x "+q)
		} else if ps.b.mode == filemode.Executable && ps.w.mode == filemode.Regular {
			steps = append(steps, "chmod +x "+q)
		}
	} else {
		switch {
		case ps.i.present || ps.unmerged || (ps.idx >= 0):
			steps = append(steps, "git rm -r -f -q -- "+q)
		case ps.w.present && len(steps) == 0:
			steps = append(steps, "rm "+rmQuote(ps.path))
		}
	}
	if !ps.b.same(ps.h) {
		steps = append(steps, "git commit -m "+shellQuote("hgate: restore "+ps.path)+" -- "+q)
	}
	return strings.Join(steps, " && ")
}

// findRenames turns a deleted path whose content reappears at an added path
// into a rename.
func (st *state) findRenames(vs []Violation) {
	added := map[plumbing.Hash]string{}
	var deleted []int
	for i := range vs {
		switch vs[i].Kind {
		case "deleted":
			deleted = append(deleted, i)
		}
	}
	if len(deleted) == 0 {
		return
	}
	var paths []string
	for p, ps := range st.paths {
		if !ps.b.present && ps.final().present {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		ps := st.paths[p]
		if ps.untracked && ps.w.hash.IsZero() && !ps.nested && ps.w.huge == 0 {
			if err := st.hashUntracked(ps); err != nil {
				continue
			}
		}
		if h := ps.final().hash; !h.IsZero() {
			if _, ok := added[h]; !ok {
				added[h] = p
			}
		}
	}
	for _, i := range deleted {
		ps := st.paths[vs[i].Path]
		if to, ok := added[ps.b.hash]; ok {
			vs[i].Kind = "renamed"
			vs[i].Detail = joinNonEmpty("renamed to "+to, vs[i].Detail)
		}
	}
}

func joinNonEmpty(a, b string) string {
	if b == "" {
		return a
	}
	return a + "; " + b
}

// shellQuote quotes s for sh when it holds anything but safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./+,:@%=", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// rmQuote quotes a path for rm, which has no "--" habit in hints.
func rmQuote(p string) string {
	if strings.HasPrefix(p, "-") {
		p = "./" + p
	}
	return shellQuote(p)
}
