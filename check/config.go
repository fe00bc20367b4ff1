package check

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fsafe"
)

// configMax bounds the worktree's hgate.yaml as gate.LoadConfig bounds it.
const configMax = 16 << 20

// Config loads hgate.yaml as every command does (gate.LoadConfig: the copy in use, its
// notes on log) and validates the worktree's copy on its own, so every error of both shows
// at once, with file:line and key. The worktree's copy failing is a fail too: it is the
// set-up the user is about to commit. It returns the configuration in use, nil when it
// does not load.
func Config(repo *gitguard.Repo, file string, log io.Writer) (*config.Config, Result) {
	res := Result{Level: LevelConfig, Status: OK}
	cfg, err := gate.LoadConfig(repo, file, log)
	if err != nil {
		res.worsen(Fail)
		res.add("%s in use does not load:", file)
		addLines(&res, err.Error())
	} else {
		res.add("%s in use loads (allow: %s)", file, strings.Join(cfg.Allow, ", "))
		for _, w := range cfg.Warnings {
			res.worsen(Warn)
			res.add("warning: %s", w)
		}
	}
	onDisk, err := fsafe.ReadFile(repo.Root(), path.Clean(file), configMax)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.add("%s: no copy in the worktree", file)
	case err != nil:
		res.worsen(Cannot)
		res.add("read %s in the worktree: %v", file, err)
	case cfg != nil && sameAsUsed(repo, file, onDisk):
		// the copy in use: its errors, if any, are the lines above
	default:
		if _, perr := config.Parse(file, repo.Root(), onDisk); perr != nil {
			res.worsen(Fail)
			res.add("%s in the worktree differs from the copy in use and has errors; correct them before you commit it:", file)
			addLines(&res, perr.Error())
		} else if cfg != nil {
			res.worsen(Warn)
			res.add("%s in the worktree differs from the copy in use and is valid: commit it (and run hgate state rebase once anything is gated) to use it", file)
		}
	}
	return cfg, res
}

// sameAsUsed reports whether onDisk is the copy hgate reads: the gated commit's, else
// HEAD's (gate.LoadConfig's choice, less the ledger's view of the ref, which only matters
// when someone moved it, and which the copy in use then reports).
func sameAsUsed(repo *gitguard.Repo, file string, onDisk []byte) bool {
	base, err := repo.Ref(gitguard.GatedRef)
	if err != nil || base.IsZero() {
		if base, _, err = repo.Head(); err != nil {
			return true // no commit yet: the worktree's copy is the one in use
		}
	}
	data, err := repo.FileAt(base, file)
	return err == nil && bytes.Equal(data, onDisk)
}

// addLines adds each line of a multi-line message, indented.
func addLines(res *Result, msg string) {
	for l := range strings.Lines(msg) {
		res.add("  %s", strings.TrimRight(l, "\n"))
	}
}
