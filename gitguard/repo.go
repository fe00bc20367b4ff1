// Package gitguard is everything hgate does with git: opening the repository,
// the file guard of gate Step 0 (Check), the candidate tree the benchmark runs
// on (CandidateTree, Materialize), and the refs hgate keeps under refs/hgate/.
// It never runs the git CLI, and links none of go-git's storage: hgate's own
// code finds the git directories (repo.go), reads config files
// (internal/gitconfig), reads and writes the index file
// (internal/index; the guard's edits of it are worktree_index.go), walks the
// worktree against it (internal/walk), decodes objects and checks each
// against its id (internal/objstore), moves refs (internal/refs), commits the
// ledger's files (internal/records) and matches ignore and allow patterns as
// git does (internal/pattern). The root keeps the repository and the guard's
// policy; the names of hgate's refs are in refnames.go.
//
// The guard compares content, not git's bookkeeping. It reads the base
// commit's tree (the last gated commit, else HEAD), HEAD's tree, the index and
// the files on disk, and ignores everything an agent could set to hide a
// change: assume-unchanged and skip-worktree flags, the fsmonitor and
// untracked caches, core.fileMode, ignore rules that are not in the base
// commit (.git/info/exclude, core.excludesFile, new or edited .gitignore
// files: they only name the rule in a violation's detail), refs/replace and
// grafts (the object reader follows neither), and the GIT_DIR and
// GIT_WORK_TREE variables. Every file the guard counts is hashed: the index's
// stat data (which the agent can rewrite) may spare hashing only an allowed
// file, whose edits are no violation, and only as git trusts it — size, times,
// inode and mode all matching an entry that is not racily clean.
//
// Limits: clean/smudge filters and text conversion are never applied, so a
// repository relying on them reads as changed. A split index is read (merged
// with its shared index, as git does); a sparse index is refused with an error.
package gitguard

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/gitguard/internal/gitconfig"
	"github.com/hgate/hgate/gitguard/internal/refs"
)

// ErrNoCommits is returned by Head when HEAD names a branch with no commits.
var ErrNoCommits = errors.New("the repository has no commits yet")

// ErrRefChanged is returned by SetRef when the ref did not hold the old value.
var ErrRefChanged = refs.ErrChanged

// Repo is an open repository with a worktree.
type Repo struct {
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
	root, err := findRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", abs, err)
	}
	if root == "" {
		return nil, fmt.Errorf("open repository: no .git found in %s or any parent directory", abs)
	}
	r, err := openAt(root)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, fmt.Errorf("open repository: no .git found in %s or any parent directory", abs)
	}
	if err != nil {
		return nil, fmt.Errorf("open repository %s: %w", root, err)
	}
	return r, nil
}

// openAt opens the repository whose worktree root is root; it wraps
// plumbing.ErrReferenceNotFound when there is no HEAD.
func openAt(root string) (*Repo, error) {
	gitDir, commonDir, err := gitDirs(root)
	if err != nil {
		return nil, err
	}
	return openGitDirs(root, gitDir, commonDir)
}

// openGitDirs is openAt with the git folders known.
func openGitDirs(root, gitDir, commonDir string) (*Repo, error) {
	if _, err := os.Stat(gitDir); err != nil {
		return nil, err
	}
	if _, err := os.Stat(commonDir); err != nil {
		return nil, fmt.Errorf("common directory: %w", err)
	}
	r := &Repo{root: root, gitDir: gitDir, commonDir: commonDir, worktree: worktreeID(gitDir, commonDir)}
	head, err := r.rawRefStore().Read("HEAD")
	if err != nil {
		return nil, fmt.Errorf("HEAD: %w", err)
	}
	if head == "" {
		return nil, fmt.Errorf("HEAD: %w", plumbing.ErrReferenceNotFound)
	}
	cfg, err := r.localConfig()
	if err != nil {
		return nil, err
	}
	if err := readableFormat(cfg); err != nil {
		return nil, err
	}
	return r, nil
}

// findRoot returns the first of dir and its parents that holds ".git" (a
// directory, or a file naming one), or "" when none does. A dir that is a
// file starts the search at its parent.
func findRoot(dir string) (string, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		dir = filepath.Dir(dir)
	}
	for {
		_, err := os.Stat(filepath.Join(dir, ".git"))
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", nil
		}
		dir = parent
	}
}

// readableFormat refuses what hgate cannot read correctly: a repository
// format version above 1, or any extensions.* setting (objectFormat,
// refStorage, worktreeConfig, ...) other than git's no-op test ones.
func readableFormat(cfg *gitconfig.Config) error {
	switch v, _ := cfg.Get("core.repositoryformatversion"); v {
	case "", "0", "1":
	default:
		return fmt.Errorf("core.repositoryformatversion %s is not supported", v)
	}
	var unknown []string
	for _, e := range cfg.Entries {
		k, ok := strings.CutPrefix(e.Name, "extensions.")
		if ok && k != "noop" && k != "noop-v1" && !slices.Contains(unknown, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("unsupported repository extension: %s", strings.Join(unknown, ", "))
	}
	return nil
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

// Commit reads commit h, checked against its id.
func (r *Repo) Commit(h plumbing.Hash) (*Commit, error) { return r.objects().Commit(h) }

// CommitByPrefix finds the commit whose id starts with prefix (hex, such as the short
// ids of results.tsv), as git rev-parse finds an abbreviated one; with several, the
// first that is a commit. The error wraps plumbing.ErrObjectNotFound when none is.
func (r *Repo) CommitByPrefix(prefix string) (plumbing.Hash, error) {
	_, err := hex.DecodeString(prefix[:len(prefix)&^1]) // hex digits only
	if err != nil || prefix == "" || len(prefix) > 2*len(plumbing.ZeroHash) {
		return plumbing.ZeroHash, fmt.Errorf("%q is not a commit id: %w", prefix, plumbing.ErrObjectNotFound)
	}
	hashes, err := r.objects().HashesWithPrefix(strings.ToLower(prefix))
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("find commit %s: %w", prefix, err)
	}
	for _, h := range hashes {
		if strings.HasPrefix(h.String(), strings.ToLower(prefix)) {
			if _, err := r.objects().Commit(h); err == nil {
				return h, nil
			}
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("no commit %s: %w", prefix, plumbing.ErrObjectNotFound)
}

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
	return &refs.Store{GitDir: r.gitDir, CommonDir: r.commonDir}
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
	local, global := r.configs()
	for _, cfg := range []*gitconfig.Config{local, global} {
		if name == "" {
			name, _ = cfg.Get("user.name")
		}
		if email == "" {
			email, _ = cfg.Get("user.email")
		}
	}
	return name, email
}

// localConfig reads the repository's config (in the common directory, which
// linked worktrees share).
func (r *Repo) localConfig() (*gitconfig.Config, error) {
	return gitconfig.ReadFile(filepath.Join(r.commonDir, "config"))
}

// configs returns the repository's config and the user's global one; nil
// for one that cannot be read. The global one is the first file that exists
// of $XDG_CONFIG_HOME/git/config, ~/.gitconfig and ~/.config/git/config, as
// hgate has always read it.
func (r *Repo) configs() (local, global *gitconfig.Config) {
	local, err := r.localConfig()
	if err != nil {
		local = nil
	}
	var files []string
	if xdg := os.Getenv("XDG_CONFIG_HOME"); xdg != "" {
		files = append(files, filepath.Join(xdg, "git", "config"))
	}
	if home, err := os.UserHomeDir(); err == nil {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(home, ".config", "git", "config"))
	}
	for _, f := range files {
		if _, err := os.Stat(f); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if global, err = gitconfig.ReadFile(f); err != nil {
			global = nil
		}
		break
	}
	return local, global
}
