package gitguard

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/hgate/hgate/gitguard/gitrun"
	"github.com/hgate/hgate/gitguard/internal/objstore"
	"github.com/hgate/hgate/gitguard/internal/walk"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/fsafe"
)

// Worktrees is the role of the loop's several agents: linked worktrees made and filled
// by hgate, the candidate each agent leaves, the three-way merge onto the best, and the
// question whether a path was ever committed. What only the git CLI can do (register a
// linked worktree, merge-tree, rev-list over every ref) runs through gitrun, which
// checks the repository's config first; everything that reads or writes files is
// hgate's own, so no filter, attribute or hook of the repository touches them.
type Worktrees struct {
	repo *Repo
	git  *gitrun.Runner
}

// ErrNoGit is returned by Worktrees when no git command is on PATH.
var ErrNoGit = gitrun.ErrNoGit

// ProgramChangedError is returned when git is not the file hgate found: changed while
// this hgate ran, or while an earlier one did and still that file (see gitrun).
type ProgramChangedError = gitrun.ProgramChangedError

// Worktrees checks the repository's config and info/attributes and anchors them (see
// gitrun); every git process it starts later checks them again.
func (r *Repo) Worktrees() (*Worktrees, error) {
	g, err := gitrun.New(r.gitDir, r.commonDir, r.root)
	if err != nil {
		return nil, err
	}
	return &Worktrees{repo: r, git: g}, nil
}

// Check returns an error when the config or info/attributes changed since they were
// anchored (naming what changed), or hold what hgate's git may not meet, or when git
// itself changed (a ProgramChangedError).
func (w *Worktrees) Check() error { return w.git.Check() }

// Add makes a detached linked worktree at dir on commit (git worktree add --no-checkout)
// and writes commit's files into it and its index itself: regular files, executables and
// symlinks as the tree holds them, submodules as empty folders, nothing written through
// a link, no filter or hook run; a blob over maxFile bytes (0: DefaultMaxFileBytes) is
// refused.
func (w *Worktrees) Add(dir string, commit plumbing.Hash, maxFile int64) error {
	if _, _, err := w.git.Run("worktree", "add", "--no-checkout", "--detach", dir, commit.String()); err != nil {
		return err
	}
	fault.Point("worktree-added") // registered with git, its files not yet written
	lr, err := w.linked(dir)
	if err != nil {
		return err
	}
	return lr.fill(commit, w.repo.maxFileOr(maxFile))
}

// Remove removes the linked worktree at dir (git worktree remove --force).
func (w *Worktrees) Remove(dir string) error {
	_, _, err := w.git.Run("worktree", "remove", "--force", dir)
	return err
}

// Prune forgets linked worktrees whose folders are gone.
func (w *Worktrees) Prune() error {
	_, _, err := w.git.Run("worktree", "prune")
	return err
}

// Merge merges theirs into ours with their merge base (git merge-tree --write-tree) and
// returns the merged tree; conflict is true (and the tree zero) when they do not merge.
func (w *Worktrees) Merge(ours, theirs plumbing.Hash) (tree plumbing.Hash, conflict bool, err error) {
	out, code, err := w.git.Run("merge-tree", "--write-tree", "--no-messages", ours.String(), theirs.String())
	if code == 1 {
		return plumbing.ZeroHash, true, nil
	}
	if err != nil {
		return plumbing.ZeroHash, false, err
	}
	line, _, _ := strings.Cut(out, "\n")
	if !plumbing.IsHash(line) {
		return plumbing.ZeroHash, false, fmt.Errorf("git merge-tree: %q is not a tree id", line)
	}
	return plumbing.NewHash(line), false, nil
}

// Committed returns a commit of any ref that holds rel (a slash path from the root),
// or "" when none does. rel is a path, never a pattern: to git a path is a pathspec,
// where "*" is a glob and a leading ":" is magic (":secret" would ask about "secret").
func (w *Worktrees) Committed(rel string) (string, error) {
	out, _, err := w.git.Run("--literal-pathspecs", "rev-list", "-1", "--all", "--", rel)
	return out, err
}

// linked opens the linked worktree at dir with the git folder hgate's own repository
// names for it (.git/worktrees/<id>, found by its gitdir file): never through dir/.git,
// which is in a folder an agent may write.
func (w *Worktrees) linked(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(w.repo.commonDir, "worktrees")
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil, fmt.Errorf("linked worktree %s: %w", dir, err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(base, e.Name(), "gitdir"))
		if err == nil && filepath.Clean(strings.TrimSpace(string(b))) == filepath.Join(abs, ".git") {
			return openDirs(abs, filepath.Join(base, e.Name()), w.repo.commonDir)
		}
	}
	return nil, fmt.Errorf("linked worktree %s: git does not list it", dir)
}

// maxFileOr is n, or DefaultMaxFileBytes when n is not positive.
func (r *Repo) maxFileOr(n int64) int64 {
	if n <= 0 {
		return DefaultMaxFileBytes
	}
	return n
}

// fill writes the files of commit's tree into the (empty but for .git) worktree and
// builds its index from what it wrote. A blob over max bytes is refused.
func (r *Repo) fill(commit plumbing.Hash, max int64) error {
	since := time.Now()
	tree, err := r.objects().TreeOf(commit)
	if err != nil {
		return err
	}
	files := map[string]objstore.Entry{}
	if err := r.objects().Trees(nil).Files(tree, "", files); err != nil {
		return err
	}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	root, err := r.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	stats := map[string]walk.Stat{}
	for _, p := range paths {
		e := files[p]
		if err := objstore.CheckPath(p); err != nil {
			return fmt.Errorf("fill %s: %w", r.root, err)
		}
		fs, err := r.writeEntry(root, p, e, max)
		if err != nil {
			return objstore.ForPath(err, "fill "+r.root, p)
		}
		stats[p] = fs
	}
	return r.editIndex(tree, files, stats, since, true)
}

// writeEntry writes one tree entry at p (see writeFromTree); a submodule is an empty
// folder, a blob over max bytes an error.
func (r *Repo) writeEntry(root *fsafe.Root, p string, e objstore.Entry, max int64) (walk.Stat, error) {
	switch e.Mode {
	case filemode.Submodule:
		return walk.Stat{}, root.MkdirAll(p, 0o755)
	case filemode.Regular, filemode.Executable, filemode.Deprecated, filemode.Symlink:
	default:
		return walk.Stat{}, fmt.Errorf("unsupported mode %s", e.Mode)
	}
	if n, err := r.objects().Size(e.Hash); err == nil && n > max {
		return walk.Stat{}, fmt.Errorf("%d bytes, over gate.max_file_bytes (%d)", n, max)
	}
	return r.writeFromTree(root, p, e.Mode, e.Hash)
}

// openDirs opens the worktree at root with its git folders given, not looked up.
func openDirs(root, gitDir, commonDir string) (*Repo, error) {
	r, err := openGitDirs(root, gitDir, commonDir)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", root, err)
	}
	return r, nil
}

// Candidate commits what an agent left in the linked worktree at dir (everything beyond
// base that the ignore rules of base do not hide, allowed or not: Step 0 judges it in the
// main worktree) on top of base, built by hgate from the files, never by git add. It
// returns the zero hash when the agent left nothing; and, without committing, Step 0's
// reasons against files it would have to read that it may not: a fifo, socket or device,
// or a file over the size bound. A worktree that does not exist (hgate was killed before
// it was made) left nothing.
func (w *Worktrees) Candidate(dir string, base plumbing.Hash, opts Options, message string, author Signature) (plumbing.Hash, []string, error) {
	if _, err := os.Lstat(dir); os.IsNotExist(err) {
		return plumbing.ZeroHash, nil, nil
	}
	lr, err := w.linked(dir)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	opts.Base = base
	s, st, err := lr.snapshot(opts)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if s.headCommit != base {
		return plumbing.ZeroHash, nil, fmt.Errorf("linked worktree %s: HEAD is %s, not %s", dir, short(s.headCommit), short(base))
	}
	if unread := lr.unread(s, st); len(unread) > 0 {
		return plumbing.ZeroHash, unread, nil
	}
	tree, err := lr.worktreeTree(s, st)
	if err != nil || tree == s.headTree {
		return plumbing.ZeroHash, nil, err
	}
	c, err := lr.objects().WriteCommit(tree, message, author, base)
	return c, nil, err
}

// unread lists, sorted, Step 0's reasons against the changed or untracked files of st
// that are special files, over the size bound, or at a path past MaxPathBytes.
func (r *Repo) unread(s *snapshot, st *state) []string {
	var why []string
	for _, p := range sortedPaths(st) {
		ps := st.paths[p]
		if ps.nested || !ps.w.present || ps.w.same(ps.h) && !ps.untracked {
			continue
		}
		switch {
		case ps.w.long:
			why = append(why, fmt.Sprintf("Step 0: a path of %d bytes, over the %d a clean room can hold: left unread", len(p), MaxPathBytes))
		case ps.w.mode == filemode.Empty:
			fi, err := os.Lstat(r.root + "/" + p)
			if err == nil {
				why = append(why, fmt.Sprintf("Step 0: %s is a %s, not a file: left unread", p, specialKind(fi.Mode())))
			}
		case ps.w.huge > 0:
			why = append(why, fmt.Sprintf("Step 0: %s is %d bytes, over gate.max_file_bytes (%d): left unread", p, ps.w.huge, s.maxFile))
		}
	}
	return why
}

// specialKind names a special file's type for a reason.
func specialKind(m os.FileMode) string {
	switch {
	case m&os.ModeNamedPipe != 0:
		return "fifo"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// PlaceTree makes the worktree's files those of tree where tree differs from HEAD's, and
// leaves the index at HEAD: as if an agent had edited them (what git read-tree --reset -u
// then git reset did, without git's checkout, its filters or its attributes). Files are
// removed, or written from the object database without following a link; a file over
// the size bound is refused. Idempotent: placing it again writes the same files.
func (r *Repo) PlaceTree(tree plumbing.Hash, maxFile int64) error {
	_, headTree, err := r.Head()
	if err != nil {
		return err
	}
	cs, err := r.objects().Trees(nil).Diff(headTree, tree)
	if err != nil {
		return err
	}
	root, err := r.openRoot()
	if err != nil {
		return err
	}
	defer root.Close()
	// Removals first, deepest first, so a file can take the place of a folder.
	for k := len(cs) - 1; k >= 0; k-- {
		c := cs[k]
		if err := objstore.CheckPath(c.Path); err != nil {
			return fmt.Errorf("place %s: %w", tree, err)
		}
		if c.To.Mode != 0 {
			continue
		}
		if err := root.Remove(c.Path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("place: remove %s: %w", c.Path, err)
		}
		removeEmptyParents(root, c.Path)
	}
	for _, c := range cs {
		if c.To.Mode == 0 {
			continue
		}
		if _, err := r.writeEntry(root, c.Path, c.To, r.maxFileOr(maxFile)); err != nil {
			return objstore.ForPath(err, "place", c.Path)
		}
	}
	return nil
}
