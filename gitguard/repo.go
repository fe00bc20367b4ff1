// Package gitguard is everything hgate does with git, through go-git only:
// opening the repository, the file guard of gate Step 0 (Check), the
// candidate tree the benchmark runs on (CandidateTree, Materialize), and the
// refs hgate keeps under refs/hgate/.
//
// The guard compares content, not git's bookkeeping. It reads the base
// commit's tree (the last gated commit, else HEAD), HEAD's tree, the index and
// the files on disk, and ignores everything an agent could set to hide a
// change: assume-unchanged and skip-worktree flags, the fsmonitor and
// untracked caches, core.fileMode, ignore rules that are not in the base
// commit (.git/info/exclude, core.excludesFile, new or edited .gitignore
// files), refs/replace and grafts (go-git reads neither), and the GIT_DIR and
// GIT_WORK_TREE variables. The index's stat data is used only as git uses it:
// to skip hashing a file whose size, times, inode and mode all match an entry
// that is not racily clean.
//
// Limits: clean/smudge filters and text conversion are never applied, so a
// repository relying on them reads as changed; split and sparse indexes are
// refused with an error.
package gitguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	gogitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard/internal/refs"
)

// GatedRef is the ref holding the last commit that passed the gate.
const GatedRef = "refs/hgate/gated"

// ErrNoCommits is returned by Head when HEAD names a branch with no commits.
var ErrNoCommits = errors.New("the repository has no commits yet")

// ErrRefChanged is returned by SetRef when the ref did not hold the old value.
var ErrRefChanged = refs.ErrChanged

// Repo is an open repository with a worktree.
type Repo struct {
	repo      *git.Repository
	root      string // worktree root, absolute
	gitDir    string // this worktree's git directory (index, HEAD)
	commonDir string // objects, refs, config, info
	worktree  string // a linked worktree's id, "" for the main one (see worktreerefs.go)
}

// Open opens the repository containing dir, looking upward for ".git". It
// never consults GIT_DIR, GIT_WORK_TREE or core.worktree: an agent could
// point those at a decoy.
func Open(dir string) (*Repo, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", dir, err)
	}
	r, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		if errors.Is(err, git.ErrRepositoryNotExists) {
			return nil, fmt.Errorf("open repository: no .git found in %s or any parent directory", abs)
		}
		return nil, fmt.Errorf("open repository %s: %w", abs, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("open repository %s: no worktree (bare repository?): %w", abs, err)
	}
	root := wt.Filesystem.Root()
	gitDir, commonDir, err := gitDirs(root)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", root, err)
	}
	return &Repo{repo: r, root: root, gitDir: gitDir, commonDir: commonDir, worktree: worktreeID(gitDir, commonDir)}, nil
}

// gitDirs finds the git directory of the worktree at root the way go-git
// did: ".git" is a directory, or a file "gitdir: PATH" (linked worktrees and
// submodules); "commondir" inside it points at the shared directory.
func gitDirs(root string) (gitDir, commonDir string, err error) {
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Stat(dotgit)
	if err != nil {
		return "", "", err
	}
	gitDir = dotgit
	if !fi.IsDir() {
		b, err := os.ReadFile(dotgit)
		if err != nil {
			return "", "", err
		}
		line, _, _ := strings.Cut(string(b), "\n")
		p, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir: ")
		if !ok {
			return "", "", fmt.Errorf("%s: expected a line \"gitdir: PATH\"", dotgit)
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		gitDir = filepath.Clean(p)
	}
	commonDir = gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		p := strings.TrimSpace(string(b))
		if !filepath.IsAbs(p) {
			p = filepath.Join(gitDir, p)
		}
		commonDir = filepath.Clean(p)
	}
	return gitDir, commonDir, nil
}

// Root returns the absolute path of the worktree root.
func (r *Repo) Root() string { return r.root }

// Git returns the go-git repository.
func (r *Repo) Git() *git.Repository { return r.repo }

// Head returns the commit HEAD points at and its tree. On a branch without
// commits it returns an error wrapping ErrNoCommits.
func (r *Repo) Head() (commit, tree plumbing.Hash, err error) {
	h, err := r.refStore().Resolve("HEAD")
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, err
	}
	if h.IsZero() {
		return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("read HEAD: %w", ErrNoCommits)
	}
	tree, err = r.objects().TreeOf(h)
	if err != nil {
		return plumbing.ZeroHash, plumbing.ZeroHash, fmt.Errorf("read HEAD commit %s: %w", h, err)
	}
	return h, tree, nil
}

// Ref returns the hash a ref points at, or the zero hash when it is absent.
func (r *Repo) Ref(name string) (plumbing.Hash, error) { return r.refStore().Hash(name) }

// SetRef points name at new if it still points at old; a zero old means the
// ref must not exist yet, a zero new deletes it. A lost race returns an error
// wrapping ErrRefChanged, so the caller can re-read and retry.
func (r *Repo) SetRef(name string, new, old plumbing.Hash) error {
	if !strings.HasPrefix(name, "refs/") {
		return fmt.Errorf("set ref %s: name must start with refs/", name)
	}
	return r.updateRef(name, new, old)
}

// updateRef is how every ref hgate owns moves (see package refs).
func (r *Repo) updateRef(name string, new, old plumbing.Hash) error {
	return r.refStore().Update(name, refs.HashValue(new), refs.HashValue(old))
}

// refStore reads and moves refs by the names hgate gives them, stored where this
// worktree keeps them (RefName).
func (r *Repo) refStore() *refs.Store {
	s := r.rawRefStore()
	s.Stored = r.RefName
	return s
}

// rawRefStore reads and moves refs by the names they are stored under.
func (r *Repo) rawRefStore() *refs.Store {
	return &refs.Store{GitDir: r.gitDir, CommonDir: r.commonDir, Refs: r.repo.Storer}
}

func short(h plumbing.Hash) string {
	if h.IsZero() {
		return "nothing"
	}
	return h.String()[:12]
}

// ChangedPaths returns, sorted, the file paths that differ between the trees
// of two commits (a tree hash is accepted too; zero stands for the empty tree).
func (r *Repo) ChangedPaths(from, to plumbing.Hash) ([]string, error) {
	return r.objects().ChangedPaths(from, to)
}

// TreeOf returns the tree of a commit (the gate finds the receipt of refs/hgate/best by it).
func (r *Repo) TreeOf(commit plumbing.Hash) (plumbing.Hash, error) { return r.objects().TreeOf(commit) }

// Identity returns user.name and user.email as git would use them for a commit here:
// the repository's config over the user's global one; empty when neither sets them.
func (r *Repo) Identity() (name, email string) {
	cfg, err := r.repo.ConfigScoped(gogitconfig.GlobalScope)
	if err != nil {
		return "", ""
	}
	return cfg.User.Name, cfg.User.Email
}
