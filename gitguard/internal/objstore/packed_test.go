package objstore

import (
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/hgate/hgate/internal/gittest"
)

// packedRepo has a root commit, a second one, a merge and a commit with a
// gpgsig-like multi-line header, all packed, plus one loose commit.
// It is made once (a dozen git commands and a gc) and copied for each test that asks.
func packedRepo(t *testing.T) (*gittest.Repo, map[string]string) {
	t.Helper()
	packed.Lock()
	defer packed.Unlock()
	if packed.dir == "" {
		r, c := makePackedRepo(t)
		dir, err := os.MkdirTemp("", "hgate-objstore-packed-")
		if err == nil {
			err = exec.Command("cp", "-a", r.Dir+"/.", dir).Run()
		}
		if err != nil {
			t.Fatal(err)
		}
		packed.dir, packed.commits = dir, c
	}
	return gittest.Copy(t, packed.dir), maps.Clone(packed.commits)
}

// packed is packedRepo's repository, made once; TestMain removes it.
var packed struct {
	sync.Mutex
	dir     string
	commits map[string]string
}

func makePackedRepo(t *testing.T) (*gittest.Repo, map[string]string) {
	r := gittest.New(t)
	c := map[string]string{}
	r.Write("a.txt", "a\n")
	c["root"] = r.Commit("root")
	r.Git("checkout", "-q", "-b", "side")
	r.Write("b.txt", "b\n")
	c["side"] = r.Commit("side")
	r.Git("checkout", "-q", "main")
	r.Write("c.txt", "c\n")
	c["main"] = r.Commit("main")
	r.Git("merge", "-q", "--no-ff", "-m", "merge", "side")
	c["merge"] = r.Head()
	tree := strings.TrimSpace(r.Git("rev-parse", c["merge"]+"^{tree}"))
	raw := "tree " + tree + "\nparent " + c["merge"] + "\nauthor a <a@b> 1 +0000\ncommitter a <a@b> 1 +0000\ngpgsig -----BEGIN-----\n parent 0000000000000000000000000000000000000000\n -----END-----\n\nsigned\n"
	r.Write("raw.commit", raw)
	c["signed"] = strings.TrimSpace(r.Git("hash-object", "-t", "commit", "-w", "raw.commit"))
	r.Remove("raw.commit")
	r.Git("update-ref", "refs/heads/signed", c["signed"])
	r.Git("gc", "-q")
	r.Write("d.txt", "d\n")
	c["loose"] = r.Commit("loose")
	return r, c
}

// Every commit of packedRepo, packed (whole or as an offset delta) or loose,
// reads as go-git reads it; a tree asked for as a commit, or an absent id,
// is an error.
func TestReadPackedCommit(t *testing.T) {
	r, c := packedRepo(t)
	// Equal dates make the main commit a small delta of the side one.
	idxs, _ := filepath.Glob(r.Path(".git/objects/pack/*.idx"))
	if v := r.Git("verify-pack", "-v", idxs[0]); !regexp.MustCompile(`(?m)^` + c["main"] + ` commit .* 1 ` + c["side"] + `$`).MatchString(v) {
		t.Fatalf("the main commit is not a delta of the side commit:\n%s", v)
	}
	g, _ := open(r.Dir)
	for _, tc := range []struct {
		name string
		hash string
		ok   bool
	}{
		{"root commit", c["root"], true},
		{"one parent, stored as an offset delta", c["main"], true},
		{"merge", c["merge"], true},
		{"continuation line that looks like a parent", c["signed"], true},
		{"loose commit", c["loose"], true},
		{"a tree is not a commit", strings.TrimSpace(r.Git("rev-parse", c["root"]+"^{tree}")), false},
		{"absent object", strings.Repeat("ab", 20), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := plumbing.NewHash(tc.hash)
			got, err := g.Commit(h)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				if !errors.Is(err, plumbing.ErrObjectNotFound) {
					t.Errorf("%v does not wrap ErrObjectNotFound", err)
				}
				return
			}
			want, err := object.GetCommit(goGit(r.Dir), h) // go-git's own reading
			if err != nil {
				t.Fatal(err)
			}
			if got.TreeHash != want.TreeHash || !slices.Equal(got.ParentHashes, want.ParentHashes) {
				t.Errorf("got tree %s parents %v, go-git reads tree %s parents %v", got.TreeHash, got.ParentHashes, want.TreeHash, want.ParentHashes)
			}
		})
	}
}

// TestReadPackedCommitIndex damages or rewrites the pack index: the reader
// must find through an 8-byte offset, and refuse anything else with an
// error, never a wrong object.
func TestReadPackedCommitIndex(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(idx []byte, h plumbing.Hash) []byte
		err  string
	}{
		{"as written", func(idx []byte, _ plumbing.Hash) []byte { return idx }, ""},
		{"version 1 index", func(idx []byte, _ plumbing.Hash) []byte { idx[7] = 1; return idx }, "not a version-2 index"},
		{"truncated", func(idx []byte, _ plumbing.Hash) []byte { return idx[:len(idx)/2] }, "pack index"},
		{"offset in the 8-byte table", largeOffset, ""},
		{"offset of another object", func(idx []byte, h plumbing.Hash) []byte {
			n, i := idxEntry(idx, h)
			at := 8 + 1024 + n*24
			copy(idx[at+4*i:at+4*i+4], idx[at+4*((i+1)%n):])
			return idx
		}, "does not match its hash"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := packedRepo(t)
			h := plumbing.NewHash(c["merge"])
			idxs, _ := filepath.Glob(r.Path(".git/objects/pack/*.idx"))
			if len(idxs) != 1 {
				t.Fatalf("want one pack, have %v", idxs)
			}
			data, err := os.ReadFile(idxs[0])
			if err != nil {
				t.Fatal(err)
			}
			os.Chmod(idxs[0], 0o644)
			if err := os.WriteFile(idxs[0], tc.edit(data, h), 0o644); err != nil {
				t.Fatal(err)
			}
			g, _ := open(r.Dir)
			got, err := g.Commit(h)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if err == nil && len(got.ParentHashes) != 2 {
				t.Errorf("merge read with parents %v", got.ParentHashes)
			}
		})
	}
}

// largeOffset moves h's offset into the table of 8-byte offsets, as git
// writes it for packs over 2 GiB.
func largeOffset(idx []byte, h plumbing.Hash) []byte {
	n, i := idxEntry(idx, h)
	at := 8 + 1024 + n*24 + 4*i
	off := binary.BigEndian.Uint32(idx[at:])
	binary.BigEndian.PutUint32(idx[at:], 0x80000000)
	tail := slices.Clone(idx[8+1024+n*28:])
	var big [8]byte
	binary.BigEndian.PutUint64(big[:], uint64(off))
	return append(append(idx[:8+1024+n*28:8+1024+n*28], big[:]...), tail...)
}

// idxEntry returns the number of objects in a pack index and h's position.
func idxEntry(idx []byte, h plumbing.Hash) (n, i int) {
	n = int(binary.BigEndian.Uint32(idx[8+255*4:]))
	for ; i < n; i++ {
		if string(idx[8+1024+i*20:8+1024+i*20+20]) == string(h[:]) {
			break
		}
	}
	return n, i
}

// open is the store of the repository at dir.
func open(dir string) (Store, error) {
	return New(filepath.Join(dir, ".git")), nil
}

// goGit is go-git's storage of the repository at dir, which the tests
// compare this package's readings with.
func goGit(dir string) *filesystem.Storage {
	return filesystem.NewStorage(osfs.New(filepath.Join(dir, ".git")), cache.NewObjectLRUDefault())
}
