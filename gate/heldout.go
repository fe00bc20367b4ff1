package gate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/digest"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/statefile"
)

// The test split's per-task rewards (a receipt's test_results, baseline.json's test) are
// what gate.trials compares with, and exactly what the agent must never see: one task's
// result is the per-task signal the test split exists to withhold. So receipts and
// baseline.json, which the agent can read in the workspace and in the ledger's objects,
// hold only the keyed digest of the record (internal/digest); the record itself is <git common dir>/hgate/heldout/
// <sum>.json, a folder the agent's sandbox hides and no task may read, kept beside the
// ledger (not in the workspace) so that a workspace restored from the ledger finds it.
// The digest keeps it as tamper-evident as the ledger: a changed record no longer matches.

// HeldOutDir is the held-out records' folder, relative to the git common dir.
const HeldOutDir = "hgate/heldout"

// HeldOut is the held-out records' folder of repo.
func HeldOut(repo *gitguard.Repo) string {
	return filepath.Join(repo.CommonDir(), filepath.FromSlash(HeldOutDir))
}

// DigestKey is the digest key's file of repo (internal/digest), which every agent sandbox
// hides like the held-out records.
func DigestKey(repo *gitguard.Repo) string { return digest.KeyPath(repo.CommonDir()) }

// vault is where held-out records are kept and the key that names them: records are
// named by the HMAC of their bytes (a plain SHA-256 in a workspace prepared before keys),
// so that the name the agent can read tells it nothing it could check guesses against.
type vault struct {
	dir, common string
	key         func() (*digest.Key, error)
}

// heldOut is the held-out records' vault of e's repository.
func heldOut(e *Env) vault {
	return vault{dir: HeldOut(e.Repo), common: e.Repo.CommonDir(), key: func() (*digest.Key, error) { return digestKey(e) }}
}

// vaultOf is the vault of repo for a reader with no Env: it never creates a key.
func vaultOf(repo *gitguard.Repo) vault {
	common := repo.CommonDir()
	return vault{dir: HeldOut(repo), common: common, key: func() (*digest.Key, error) { return loadKey(common) }}
}

// loadKey is the repository's digest key; nil without error when there is none (a
// workspace prepared before keys, which keeps plain digests until its reset).
func loadKey(common string) (*digest.Key, error) {
	k, err := digest.Load(common)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return k, err
}

// digestKey is the digest key of e's repository. prepare taking a new baseline (no
// baseline recorded yet: a first prepare, or one after a reset) creates it; a workspace an
// older hgate prepared has none and keeps plain digests until `hgate prepare --reset`.
func digestKey(e *Env) (*digest.Key, error) {
	k, err := loadKey(e.Repo.CommonDir())
	if k != nil || err != nil {
		return k, err
	}
	_, prepared, err := recordedMeasured(e.ledger(), e.ws())
	if err != nil {
		return nil, err
	}
	if prepared {
		// No key in a prepared workspace: one an older hgate prepared (plain digests), or
		// one whose key was lost. Never a new key or plain digests for the latter: they
		// would orphan its keyed records, or name new ones by a digest anyone recomputes.
		if keyedVault(HeldOut(e.Repo)) {
			return nil, digest.LostKey(e.Repo.CommonDir())
		}
		return nil, nil
	}
	return digest.Create(e.Repo.CommonDir())
}

// keyedVault reports whether a held-out record in dir is named by a keyed digest: its
// name is not the plain SHA-256 of what it holds.
func keyedVault(dir string) bool {
	ents, _ := os.ReadDir(dir)
	for _, en := range ents {
		name, ok := strings.CutSuffix(en.Name(), ".json")
		if !ok || !en.Type().IsRegular() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			continue
		}
		if plain, _ := digest.Check(nil, "", data, name); !plain {
			return true
		}
	}
	return false
}

// sealTrials writes t to the held-out folder and returns its digest.
func sealTrials(v vault, t Trials) (string, error) { return sealRecord(v, t) }

// openTrials reads the Trials record whose digest owner (a state file's display name) holds.
func openTrials(v vault, owner, name string) (Trials, error) {
	var t Trials
	return t, openRecord(v, owner, name, &t)
}

// heldMean is the record of a test score's exact mean: val_score has the 4 decimals the
// aggregate needs, while the unrounded mean of rewards between 0 and 1, or of per-task
// means over differing trial counts, carries digits that tell more than k of n.
type heldMean struct {
	ValMean float64 `json:"val_mean"`
}

// sealMean seals *m (nil: nothing) and returns the digest naming it.
func sealMean(v vault, m *float64) (string, error) {
	if m == nil {
		return "", nil
	}
	return sealRecord(v, heldMean{*m})
}

// openMean reads the exact mean the digest name names ("" : none).
func openMean(v vault, owner, name string) (*float64, error) {
	if name == "" {
		return nil, nil
	}
	var m heldMean
	if err := openRecord(v, owner, name, &m); err != nil {
		return nil, err
	}
	return &m.ValMean, nil
}

// sealRecord writes value's JSON to the held-out folder and returns its digest.
func sealRecord(v vault, value any) (string, error) {
	data, err := statefile.EncodeJSON(value)
	if err != nil {
		return "", err
	}
	key, err := v.key()
	if err != nil {
		return "", err
	}
	name := key.Sum(data)
	path := filepath.Join(v.dir, digest.Hex(name)+".json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := statefile.WriteAtomic(path, data); err != nil {
		return "", err
	}
	fault.Point("heldout-sealed") // the record written, no state file names it yet
	return name, nil
}

// openRecord decodes into into the record whose digest owner (a state file's display name) holds.
func openRecord(v vault, owner, name string, into any) error {
	if h := digest.Hex(name); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return fmt.Errorf("%s: %q does not name a held-out record; take a new baseline with `hgate prepare --reset`", owner, name)
	}
	path := filepath.Join(v.dir, digest.Hex(name)+".json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: the held-out record %s is missing (removed outside hgate); take a new baseline with `hgate prepare --reset`", owner, path)
	}
	if err != nil {
		return err
	}
	key, err := v.key()
	if err != nil {
		return fmt.Errorf("%s: %w", owner, err)
	}
	ok, err := digest.Check(key, v.common, data, name)
	if err != nil {
		return fmt.Errorf("%s: %w", owner, err)
	}
	if !ok {
		return fmt.Errorf("%s: the held-out record %s does not match its digest (changed outside hgate, or the digest key %s was replaced); take a new baseline with `hgate prepare --reset`", owner, path, digest.KeyPath(v.common))
	}
	return statefile.DecodeJSON(path, data, into)
}

// sealedReceipt renders r with its test results and exact mean sealed.
func sealedReceipt(v vault, r *Receipt) func() ([]byte, error) {
	return func() ([]byte, error) {
		c := *r
		if c.TestResults != nil {
			sum, err := sealTrials(v, c.TestResults)
			if err != nil {
				return nil, err
			}
			c.TestResults, c.TestResultsSHA = nil, sum
		}
		sum, err := sealMean(v, c.ValMean)
		if err != nil {
			return nil, err
		}
		c.ValMean, c.ValMeanSHA = nil, sum
		return statefile.EncodeJSON(&c)
	}
}

// sealedBaseline renders b with its test trials and exact mean sealed.
func sealedBaseline(v vault, b *Baseline) func() ([]byte, error) {
	return func() ([]byte, error) {
		c := *b
		if c.Test != nil {
			sum, err := sealTrials(v, c.Test)
			if err != nil {
				return nil, err
			}
			c.Test, c.TestSHA = nil, sum
		}
		sum, err := sealMean(v, c.ValMean)
		if err != nil {
			return nil, err
		}
		c.ValMean, c.ValMeanSHA = nil, sum
		return statefile.EncodeJSON(&c)
	}
}

// unseal fills r's test results and exact mean from the held-out records it names (file
// is r's path).
func (r *Receipt) unseal(v vault, file string) (err error) {
	if r.TestResultsSHA != "" {
		if r.TestResults, err = openTrials(v, file, r.TestResultsSHA); err != nil {
			return err
		}
	}
	if r.ValMeanSHA != "" {
		r.ValMean, err = openMean(v, file, r.ValMeanSHA)
	}
	return err
}

// unseal fills b's test trials and exact mean from the held-out records it names.
func (b *Baseline) unseal(v vault, file string) (err error) {
	if b.TestSHA != "" {
		if b.Test, err = openTrials(v, file, b.TestSHA); err != nil {
			return err
		}
	}
	if b.ValMeanSHA != "" {
		b.ValMean, err = openMean(v, file, b.ValMeanSHA)
	}
	return err
}
