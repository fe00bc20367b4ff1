package gate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/statefile"
)

// The test split's per-task rewards (a receipt's test_results, baseline.json's test) are
// what gate.trials compares with, and exactly what the agent must never see: one task's
// result is the per-task signal the test split exists to withhold. So receipts and
// baseline.json, which the agent can read in the workspace and in the ledger's objects,
// hold only the SHA-256 of the record; the record itself is <git common dir>/hgate/heldout/
// <sum>.json, a folder the agent's sandbox hides and no task may read, kept beside the
// ledger (not in the workspace) so that a workspace restored from the ledger finds it.
// The digest keeps it as tamper-evident as the ledger: a changed record no longer matches.

// HeldOutDir is the held-out records' folder, relative to the git common dir.
const HeldOutDir = "hgate/heldout"

// HeldOut is the held-out records' folder of repo.
func HeldOut(repo *gitguard.Repo) string {
	return filepath.Join(repo.CommonDir(), filepath.FromSlash(HeldOutDir))
}

// heldOut is the held-out records' folder of e's repository.
func (e *Env) heldOut() string { return HeldOut(e.Repo) }

// sealTrials writes t to the held-out folder and returns its digest.
func sealTrials(dir string, t Trials) (string, error) {
	data, err := statefile.EncodeJSON(t)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	name := hex.EncodeToString(sum[:])
	path := filepath.Join(dir, name+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := statefile.WriteAtomic(path, data); err != nil {
		return "", err
	}
	fault.Point("heldout-sealed") // the record written, no state file names it yet
	return name, nil
}

// openTrials reads the record whose digest owner (a state file's display name) holds.
func openTrials(dir, owner, name string) (Trials, error) {
	path := filepath.Join(dir, name+".json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: the held-out record %s is missing (removed outside hgate); take a new baseline with `hgate prepare --reset`", owner, path)
	}
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != name {
		return nil, fmt.Errorf("%s: the held-out record %s does not match its SHA-256 (changed outside hgate); take a new baseline with `hgate prepare --reset`", owner, path)
	}
	var t Trials
	if err := statefile.DecodeJSON(path, data, &t); err != nil {
		return nil, err
	}
	return t, nil
}

// sealedReceipt renders r with its test results sealed.
func sealedReceipt(dir string, r *Receipt) func() ([]byte, error) {
	return func() ([]byte, error) {
		c := *r
		if c.TestResults != nil {
			sum, err := sealTrials(dir, c.TestResults)
			if err != nil {
				return nil, err
			}
			c.TestResults, c.TestResultsSHA = nil, sum
		}
		return statefile.EncodeJSON(&c)
	}
}

// sealedBaseline renders b with its test trials sealed.
func sealedBaseline(dir string, b *Baseline) func() ([]byte, error) {
	return func() ([]byte, error) {
		c := *b
		if c.Test != nil {
			sum, err := sealTrials(dir, c.Test)
			if err != nil {
				return nil, err
			}
			c.Test, c.TestSHA = nil, sum
		}
		return statefile.EncodeJSON(&c)
	}
}

// unseal fills r's test results from the held-out record it names (file is r's path).
func (r *Receipt) unseal(dir, file string) (err error) {
	if r.TestResultsSHA != "" {
		r.TestResults, err = openTrials(dir, file, r.TestResultsSHA)
	}
	return err
}

// unseal fills b's test trials from the held-out record it names.
func (b *Baseline) unseal(dir, file string) (err error) {
	if b.TestSHA != "" {
		b.Test, err = openTrials(dir, file, b.TestSHA)
	}
	return err
}
