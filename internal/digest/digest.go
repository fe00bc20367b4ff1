// Package digest names data the agent must not learn by a digest it cannot recompute.
//
// A plain SHA-256 of a small secret (the test split's per-task rewards, a test-only
// answer file) is as good as the secret: whoever can read the digest enumerates the few
// values the secret can take and hashes each. So every digest hgate writes where the
// agent can read it, of anything derived from held-out or test-only data, is an
// HMAC-SHA256 under a key kept in the git common dir (KeyFile), which no sandbox can
// read: the loop's agent sandbox hides it like the held-out records, and tasks never see
// .git. Keyed digests are written with the "hmac-sha256:" prefix; a digest without it is
// a plain SHA-256 from a workspace prepared before keys existed, still checked as such.
package digest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hgate/hgate/internal/fault"
)

// KeyFile is the key's path relative to the git common dir.
const KeyFile = "hgate/key"

// Prefix marks a keyed digest.
const Prefix = "hmac-sha256:"

// keySize is the key's length in bytes: HMAC-SHA256's block-size-safe 32.
const keySize = 32

// resetAdvice is the way on when the key is gone: nothing can check the old digests.
const resetAdvice = "run `hgate prepare --reset` to take a new baseline under a new key (the old state stays in `hgate state log`)"

// Key is the digest key of one repository.
type Key struct {
	secret []byte
	path   string
}

// KeyPath is the key file of the repository whose git common dir is commonDir.
func KeyPath(commonDir string) string {
	return filepath.Join(commonDir, filepath.FromSlash(KeyFile))
}

// TempDir is where Create writes the key before it links it to its name: hidden from
// every sandbox like the key itself.
func TempDir(commonDir string) string { return KeyPath(commonDir) + ".d" }

// Load reads the key; an error wrapping fs.ErrNotExist when there is none.
func Load(commonDir string) (*Key, error) {
	path := KeyPath(commonDir)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("digest key: %w", err)
	}
	if len(data) != keySize {
		return nil, fmt.Errorf("digest key %s: %d bytes, expected %d (damaged); %s", path, len(data), keySize, resetAdvice)
	}
	return &Key{secret: data, path: path}, nil
}

// Create makes the key from crypto/rand, readable by its owner alone, never replacing
// one: when the file exists it is loaded instead.
func Create(commonDir string) (*Key, error) {
	path := KeyPath(commonDir)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("digest key: %w", err)
	}
	secret := make([]byte, keySize)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("digest key: %w", err)
	}
	// Written whole under a temporary name, then linked to its own: a process killed on
	// the way leaves no key or a whole one, never a short one that only a reset gets past.
	// The temporary name is in a folder of its own, hidden from every sandbox like the key
	// (TempDir): one a killed hgate left holds the key too.
	tdir := TempDir(commonDir)
	if err := os.MkdirAll(tdir, 0o700); err != nil {
		return nil, fmt.Errorf("digest key: %w", err)
	}
	tmp := filepath.Join(tdir, rand.Text())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("digest key: %w", err)
	}
	defer os.Remove(tmp)
	_, err = f.Write(secret)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("digest key: %w", err)
	}
	fault.Point("digest-key-written") // whole, not yet at its name
	if err := os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
		return Load(commonDir) // made meanwhile by another hgate: that one is the key
	} else if err != nil {
		return nil, fmt.Errorf("digest key: %w", err)
	}
	return &Key{secret: secret, path: path}, nil
}

// Path is the key's file.
func (k *Key) Path() string { return k.path }

// New starts a digest: HMAC-SHA256 under k, or a plain SHA-256 for a nil k (a workspace
// prepared before keys, until its reset).
func (k *Key) New() hash.Hash {
	if k == nil {
		return sha256.New()
	}
	return hmac.New(sha256.New, k.secret)
}

// Format spells a finished digest of h (from k.New) as hgate writes it.
func (k *Key) Format(sum []byte) string {
	if k == nil {
		return hex.EncodeToString(sum)
	}
	return Prefix + hex.EncodeToString(sum)
}

// Sum is the digest of data.
func (k *Key) Sum(data []byte) string {
	h := k.New()
	h.Write(data)
	return k.Format(h.Sum(nil))
}

// Reader is the digest of what r holds.
func (k *Key) Reader(r io.Reader) (string, error) {
	h := k.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return k.Format(h.Sum(nil)), nil
}

// Keyed reports whether d was written under a key.
func Keyed(d string) bool { return strings.HasPrefix(d, Prefix) }

// Hex is d without its prefix: what names a file.
func Hex(d string) string { return strings.TrimPrefix(d, Prefix) }

// Check reports whether data matches d: a keyed d under k, a plain one as SHA-256. A
// keyed d with no key is an error naming the key file and the way on.
func Check(k *Key, commonDir string, data []byte, d string) (bool, error) {
	if !Keyed(d) {
		sum := sha256.Sum256(data)
		return hmac.Equal([]byte(hex.EncodeToString(sum[:])), []byte(d)), nil
	}
	if k == nil {
		return false, LostKey(commonDir)
	}
	return hmac.Equal([]byte(k.Sum(data)), []byte(d)), nil
}

// LostKey is the error for keyed digests with no key to check them.
func LostKey(commonDir string) error {
	return fmt.Errorf("the digest key %s is missing: the keyed digests hgate recorded cannot be checked without it; %s", KeyPath(commonDir), resetAdvice)
}
