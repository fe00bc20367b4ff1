package gate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/ledger"
)

// LoadConfig loads hgate.yaml (file, a slash path in the repository) as of the last gated
// commit (refs/hgate/gated where the ledger last put it), else HEAD: the agent may edit
// the worktree's copy or move the ref, but neither — a wider allowlist, file_guard: false —
// has an effect until a human commits the file and runs hgate state rebase. Only a
// repository with no commit yet reads the worktree's file. Warnings (the worktree's copy
// differs, a doubtful key) and the anchors' notes go to log.
func LoadConfig(repo *gitguard.Repo, file string, log io.Writer) (*config.Config, error) {
	return loadConfig(repo, file, log, false)
}

// LoadConfigAdoptingHead is LoadConfig for a command about to take HEAD's hgate.yaml as the
// configuration (prepare --reset, state rebase): a worktree copy that HEAD already holds is
// the one it is about to use, not drift to warn of.
func LoadConfigAdoptingHead(repo *gitguard.Repo, file string, log io.Writer) (*config.Config, error) {
	return loadConfig(repo, file, log, true)
}

// writeConfig is the way out when there is no hgate.yaml at all.
const writeConfig = "write it, with allow: and benchmark: at least (see docs/reference/config.md), and commit it"

// configMax bounds the hgate.yaml read from the worktree.
const configMax = 16 << 20

func loadConfig(repo *gitguard.Repo, file string, log io.Writer, adoptHead bool) (*config.Config, error) {
	src, err := readConfig(repo, file)
	if err != nil {
		return nil, err
	}
	drifted := !src.base.IsZero() && src.diskErr == nil && !bytes.Equal(src.onDisk, src.data)
	cfg, err := config.Parse(file, repo.Root(), src.data)
	if err != nil {
		if drifted {
			// The lines above are of the committed copy, not of the file the user sees.
			advice := "commit it to use it"
			if src.gated {
				advice = "commit it and run `hgate state rebase`"
			}
			err = errors.Join(err, fmt.Errorf("%s: the lines above are of the copy in %s, which hgate reads, not of the worktree's, which differs: %s",
				file, src.base.String()[:7], advice))
			warnWorktreeErrors(log, file, repo.Root(), src.onDisk)
		}
		return nil, err
	}
	if drifted {
		warnDrift(log, repo, file, src, cfg, adoptHead)
	}
	Warn(log, cfg)
	// gate.trials: auto applies the decision prepare recorded in the ledger.
	if err := applyChoice(repo, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// configSource is the hgate.yaml hgate uses (data) and where it is from: base, the gated
// commit (gated) or else HEAD; zero when the repository has no commit yet and data is the
// worktree's. onDisk is the worktree's copy, diskErr why it could not be read.
type configSource struct {
	data, onDisk []byte
	diskErr      error
	base         plumbing.Hash
	gated        bool
}

// readConfig reads file as hgate uses it, and the worktree's copy beside it.
func readConfig(repo *gitguard.Repo, file string) (configSource, error) {
	var src configSource
	// The worktree is the agent's to write: read by descriptor (fsafe), bounded.
	src.onDisk, src.diskErr = fsafe.ReadFile(repo.Root(), path.Clean(filepath.ToSlash(file)), configMax)
	base, err := gatedBase(repo)
	if err != nil {
		return src, err
	}
	src.gated = !base.IsZero()
	if !src.gated {
		if base, _, err = repo.Head(); err != nil {
			base = plumbing.ZeroHash // no commit yet
		}
	}
	src.base = base
	switch {
	case !base.IsZero():
		src.data, err = repo.FileAt(base, file)
		if errors.Is(err, fs.ErrNotExist) && errors.Is(src.diskErr, fs.ErrNotExist) {
			return src, fmt.Errorf("%s: not found, neither in %s nor in the worktree: %s", file, base.String()[:7], writeConfig)
		}
		if errors.Is(err, fs.ErrNotExist) {
			return src, fmt.Errorf("%s is not committed (in %s): commit it first; hgate reads its configuration from git so that an agent's edit cannot change it", file, base.String()[:7])
		}
		return src, err
	case errors.Is(src.diskErr, fs.ErrNotExist):
		return src, fmt.Errorf("%s: not found in the worktree (the repository has no commit yet): %s", file, writeConfig)
	case src.diskErr != nil:
		return src, fmt.Errorf("read %s: %w", file, src.diskErr)
	}
	src.data = src.onDisk
	return src, nil
}

// warnDrift warns that the worktree's hgate.yaml differs from the one in use and says how
// to use it; not when the command is about to adopt HEAD's and HEAD holds the worktree's.
func warnDrift(log io.Writer, repo *gitguard.Repo, file string, src configSource, cfg *config.Config, adoptHead bool) {
	warnWorktreeErrors(log, file, repo.Root(), src.onDisk)
	head, atHead := committedAtHead(repo, file, src.onDisk)
	atHead = atHead && src.gated
	if adoptHead && atHead {
		return
	}
	where := file + " in the worktree"
	if atHead {
		where = file + " at HEAD " + head.String()[:7]
	}
	fmt.Fprintf(log, "hgate: warning: %s differs from the one in %s, which hgate uses; %s\n",
		where, src.base.String()[:7], driftAdvice(cfg, src.onDisk, src.gated, atHead))
}

// warnWorktreeErrors validates the worktree's hgate.yaml when it is not the copy in use,
// and prints its errors as warnings: a typo shows while it is only in the worktree, not
// after it is committed and every gate fails on it.
func warnWorktreeErrors(log io.Writer, file, dir string, onDisk []byte) {
	_, err := config.Parse(file, dir, onDisk)
	if err == nil {
		return
	}
	fmt.Fprintf(log, "hgate: warning: %s in the worktree, which hgate does not use yet, has errors; correct them before you commit it:\n", file)
	for line := range strings.Lines(err.Error()) {
		fmt.Fprintf(log, "hgate: warning:   %s\n", strings.TrimRight(line, "\n"))
	}
}

// driftAdvice is how to make the worktree's hgate.yaml the one hgate uses: before anything
// is gated hgate reads HEAD's, so committing it is enough; after, a rebase takes it, unless
// it changes the configuration a baseline is only comparable under, which needs a new one.
// committed says the file is already committed at HEAD, so the advice leaves out
// "commit it".
func driftAdvice(used *config.Config, onDisk []byte, gated, committed bool) string {
	if !gated {
		return "hgate reads the committed file: commit it to use it"
	}
	commit := "commit it and run"
	if committed {
		commit = "run"
	}
	if edited, err := config.Parse(used.File, used.Dir, onDisk); err == nil && len(used.Measured().Diff(edited.Measured())) > 0 {
		return "it changes the benchmark configuration the baseline was taken under: " + commit + " `hgate prepare --reset` (a new baseline and split)"
	}
	return "to change the configuration, " + commit + " `hgate state rebase`"
}

// committedAtHead reports whether HEAD, which it returns, holds file with exactly the bytes
// onDisk.
func committedAtHead(repo *gitguard.Repo, file string, onDisk []byte) (plumbing.Hash, bool) {
	head, _, err := repo.Head()
	if err != nil {
		return head, false
	}
	data, err := repo.FileAt(head, file)
	return head, err == nil && bytes.Equal(data, onDisk)
}

// ConfigAtHead loads hgate.yaml as HEAD has it: the configuration of a new baseline
// (prepare --reset, state rebase). It does not print the file's warnings.
func ConfigAtHead(repo *gitguard.Repo, file string) (*config.Config, plumbing.Hash, error) {
	head, _, err := repo.Head()
	if err != nil {
		return nil, head, err
	}
	cfg, err := configAt(repo, head, file)
	return cfg, head, err
}

// configAt loads hgate.yaml as head, HEAD's commit, has it.
func configAt(repo *gitguard.Repo, head plumbing.Hash, file string) (*config.Config, error) {
	data, err := repo.FileAt(head, file)
	if err != nil {
		return nil, fmt.Errorf("%s at HEAD %s: %w (commit it first)", file, head.String()[:7], err)
	}
	return config.Parse(file, repo.Root(), data)
}

// Warn prints the warnings of hgate.yaml on log.
func Warn(log io.Writer, cfg *config.Config) {
	for _, w := range cfg.Warnings {
		fmt.Fprintf(log, "hgate: warning: %s\n", w)
	}
}

// gatedBase is the commit hgate.yaml is read from: where the ledger last put
// refs/hgate/gated, or the ref itself when the ledger does not record it. Moving the ref
// by hand therefore changes no setting, and a move the ledger records but the ref has not
// made yet is read as made; the command's own check reports either. It writes nothing:
// every command loads its configuration, readers too, before any lock is taken.
func gatedBase(repo *gitguard.Repo) (plumbing.Hash, error) {
	var moved *ledger.Moved
	_, err := ledger.ReadRefs(repo) // the command's own check says what it finds
	if err != nil && !errors.As(err, &moved) {
		return plumbing.ZeroHash, err
	}
	if h, ok, err := ledger.ExpectedRef(repo, gitguard.GatedRef); err != nil || ok {
		return h, err
	}
	return repo.Ref(gitguard.GatedRef)
}

// CheckAnchors checks that hgate's refs are where the ledger last put them: the check of
// the commands that read the refs outside a gate run (guard, state log) and of loading
// the configuration. It only reads: a move the ledger records but the ref has not made
// (a running hgate's, or a killed one's) is said on log and left to the next command
// that writes, which holds the repository lock and finishes it (Env.verify).
func CheckAnchors(repo *gitguard.Repo, log io.Writer) error {
	pending, err := ledger.ReadRefs(repo)
	for _, p := range pending {
		fmt.Fprintf(log, "hgate: %s\n", p.Pending())
	}
	return err
}

// ReaderBase is the base Step 0 compares with in a command that only reads (guard): zero
// (refs/hgate/gated itself) unless a move of the ref is pending, then where the ledger
// puts it, as the next command that writes will.
func ReaderBase(repo *gitguard.Repo) (plumbing.Hash, error) {
	want, ok, err := ledger.ExpectedRef(repo, gitguard.GatedRef)
	if err != nil || !ok {
		return plumbing.ZeroHash, err
	}
	if cur, err := repo.Ref(gitguard.GatedRef); err != nil || cur == want {
		return plumbing.ZeroHash, err
	}
	return want, nil
}
