package gate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/ledger"
)

// LoadConfig loads hgate.yaml (file, a slash path in the repository) as of the last gated
// commit (refs/hgate/gated where the ledger last put it), else HEAD: the agent may edit
// the worktree's copy or move the ref, but neither — a wider allowlist, file_guard: false —
// has an effect until a human commits the file and runs hgate state rebase. Only a
// repository with no commit yet reads the worktree's file. Warnings (the worktree's copy
// differs, a doubtful key) and the anchors' notes go to log.
func LoadConfig(repo *gitguard.Repo, file string, log io.Writer) (*config.Config, error) {
	onDisk, diskErr := os.ReadFile(filepath.Join(repo.Root(), filepath.FromSlash(file)))
	base, err := gatedBase(repo, log)
	if err != nil {
		return nil, err
	}
	gated := !base.IsZero()
	if !gated {
		if base, _, err = repo.Head(); err != nil {
			base = plumbing.ZeroHash // no commit yet
		}
	}
	data := onDisk
	if !base.IsZero() {
		data, err = repo.FileAt(base, file)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s is not committed (in %s): commit it first; hgate reads its configuration from git so that an agent's edit cannot change it", file, base.String()[:7])
		}
		if err != nil {
			return nil, err
		}
	} else if diskErr != nil {
		return nil, fmt.Errorf("read %s: %w", file, diskErr)
	}
	cfg, err := config.Parse(file, repo.Root(), data)
	if err != nil {
		return nil, err
	}
	if !base.IsZero() && diskErr == nil && !bytes.Equal(onDisk, data) {
		fmt.Fprintf(log, "hgate: warning: %s in the worktree differs from the one in %s, which hgate uses; %s\n",
			file, base.String()[:7], driftAdvice(cfg, onDisk, gated))
	}
	Warn(log, cfg)
	// gate.trials: auto applies the decision prepare recorded in the ledger.
	if err := applyChoice(repo, cfg); err != nil {
		return nil, err
	}
	return cfg, nil
}

// driftAdvice is how to make the worktree's hgate.yaml the one hgate uses: before anything
// is gated hgate reads HEAD's, so committing it is enough; after, a rebase takes it, unless
// it changes the configuration a baseline is only comparable under, which needs a new one.
func driftAdvice(used *config.Config, onDisk []byte, gated bool) string {
	if !gated {
		return "hgate reads the committed file: commit it to use it"
	}
	if edited, err := config.Parse(used.File, used.Dir, onDisk); err == nil && len(used.Measured().Diff(edited.Measured())) > 0 {
		return "it changes the benchmark configuration the baseline was taken under: commit it and run `hgate prepare --reset` (a new baseline and split)"
	}
	return "to change the configuration, commit it and run `hgate state rebase`"
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
// refs/hgate/gated, after finishing a move a crash interrupted (said so), or the ref itself
// when the ledger does not record it. Moving the ref by hand therefore changes no setting;
// the command's own check reports the move.
func gatedBase(repo *gitguard.Repo, log io.Writer) (plumbing.Hash, error) {
	var moved *ledger.Moved
	if err := CheckAnchors(repo, log); errors.As(err, &moved) {
		if h, ok := moved.Expected(gitguard.GatedRef); ok {
			return h, nil
		}
	} else if err != nil {
		return plumbing.ZeroHash, err
	}
	return repo.Ref(gitguard.GatedRef)
}

// CheckAnchors checks that hgate's refs are where the ledger last put them, after
// finishing a move a crash interrupted (said on log): the check of the commands that
// read the refs outside a gate run (guard, state log).
func CheckAnchors(repo *gitguard.Repo, log io.Writer) error {
	rolled, err := ledger.CheckRefs(repo)
	for _, r := range rolled {
		fmt.Fprintf(log, "hgate: %s\n", r)
	}
	return err
}
