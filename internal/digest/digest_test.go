package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
)

func TestKey(t *testing.T) {
	common := t.TempDir()
	if _, err := Load(common); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load with no key: %v, want ErrNotExist", err)
	}
	k, err := Create(common)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(KeyPath(common))
	if err != nil || info.Mode().Perm() != 0o600 || info.Size() != keySize {
		t.Fatalf("key file: %v, %v", info, err)
	}
	again, err := Create(common) // never replaces the key
	if err != nil || again.Sum([]byte("x")) != k.Sum([]byte("x")) {
		t.Fatalf("a second Create replaced the key: %v", err)
	}
	other, _ := Create(t.TempDir())
	data := []byte("yes\n")
	plain := sha256.Sum256(data)
	d := k.Sum(data)
	switch {
	case !Keyed(d) || len(Hex(d)) != 64:
		t.Fatalf("keyed digest %q", d)
	case Hex(d) == hex.EncodeToString(plain[:]):
		t.Fatal("the keyed digest is the plain SHA-256")
	case d == other.Sum(data):
		t.Fatal("two keys gave one digest")
	}
	for _, c := range []struct {
		key    *Key
		data   string
		digest string
		ok     bool
	}{
		{k, "yes\n", d, true},
		{k, "no\n", d, false},
		{other, "yes\n", d, false},
		{nil, "yes\n", hex.EncodeToString(plain[:]), true}, // a workspace from before keys
		{k, "yes\n", hex.EncodeToString(plain[:]), true},   // its plain digests still check
		{k, "no\n", hex.EncodeToString(plain[:]), false},
	} {
		ok, err := Check(c.key, common, []byte(c.data), c.digest)
		if err != nil || ok != c.ok {
			t.Errorf("Check(%q, %.20s) = %v, %v; want %v", c.data, c.digest, ok, err, c.ok)
		}
	}
	if _, err := Check(nil, common, data, d); err == nil || !strings.Contains(err.Error(), "hgate prepare --reset") || !strings.Contains(err.Error(), KeyPath(common)) {
		t.Errorf("a keyed digest with no key: %v", err)
	}
	if err := os.WriteFile(KeyPath(common), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(common); err == nil {
		t.Error("a damaged key loaded")
	}
}
