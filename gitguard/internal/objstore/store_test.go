package objstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"

	"github.com/hgate/hgate/internal/gittest"
)

// deltaRepo has twenty revisions of a few kilobytes of text and of a binary
// file, so that git packs most objects as deltas, and two loose objects
// `git hash-object -w` wrote.
func deltaRepo(t *testing.T) *gittest.Repo {
	r := gittest.New(t)
	rng := rand.New(rand.NewPCG(7, 7))
	var text []string
	bin := make([]byte, 8<<10)
	for i := range bin {
		bin[i] = byte(rng.IntN(256))
	}
	for i := range 20 {
		text = append(text, fmt.Sprintf("line %d of revision %d: %s", len(text), i, strings.Repeat("x", rng.IntN(80))))
		if i%3 == 0 {
			text = text[1:]
		}
		bin[rng.IntN(len(bin))] = byte(i)
		r.Write("a.txt", strings.Join(text, "\n"))
		r.Write("b.bin", string(bin))
		r.Write(fmt.Sprintf("d%d/c.txt", i%4), strings.Join(text[:len(text)/2], "\n"))
		r.Commit(fmt.Sprintf("revision %d", i))
	}
	r.Write("loose1", "loose one\n")
	r.Write("loose2", strings.Repeat("loose two\n", 500))
	r.Git("hash-object", "-w", "loose1", "loose2")
	return r
}

// gitObjects lists every object of a repository with git's own reading of
// its type and content.
func catAll(t *testing.T, r *gittest.Repo) map[plumbing.Hash]struct {
	typ  string
	data []byte
} {
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir = r.Dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	all := map[plumbing.Hash]struct {
		typ  string
		data []byte
	}{}
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF {
			return all
		}
		f := strings.Fields(line)
		n, _ := strconv.Atoi(f[2])
		data := make([]byte, n+1)
		if _, err := io.ReadFull(br, data); err != nil {
			t.Fatal(err)
		}
		all[plumbing.NewHash(f[0])] = struct {
			typ  string
			data []byte
		}{f[1], data[:n]}
	}
}

// Every object reads as git cat-file reads it, whatever wrote the pack:
// offset deltas, hash deltas (repack.useDeltaBaseOffset=false), long chains
// (gc --aggressive), and the loose objects; Size agrees; and every id is
// found by a prefix of it.
func TestReadAsGit(t *testing.T) {
	base := deltaRepo(t)
	for _, tc := range []struct {
		name string
		git  [][]string
		kind string // a delta kind verify-pack must list, to show the case is covered
	}{
		{"loose", nil, ""},
		{"repack -adf", [][]string{{"repack", "-adf", "-q"}}, "ofs"},
		{"hash deltas", [][]string{{"-c", "repack.useDeltaBaseOffset=false", "repack", "-adf", "-q"}}, "ref"},
		{"gc --aggressive", [][]string{{"gc", "-q", "--aggressive"}}, "ofs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := gittest.Copy(t, base.Dir)
			for _, args := range tc.git {
				r.Git(args...)
			}
			for _, l := range []string{"loose1", "loose2"} {
				r.Git("hash-object", "-w", l) // loose beside the packs, as after any commit
			}
			if tc.kind != "" && !hasDeltas(t, r, tc.kind) {
				t.Fatalf("the pack has no %s deltas", tc.kind)
			}
			checkAll(t, r)
		})
	}
}

// hasDeltas reports whether a repository's pack holds deltas of a kind
// ("ofs": against an offset, "ref": against an id), read from the pack
// entries' type bits.
func hasDeltas(t *testing.T, r *gittest.Repo, kind string) bool {
	idxs, _ := filepath.Glob(r.Path(".git/objects/pack/*.idx"))
	s := New(r.Path(".git"))
	want := map[string]plumbing.ObjectType{"ofs": plumbing.OFSDeltaObject, "ref": plumbing.REFDeltaObject}[kind]
	for _, idx := range idxs {
		p, err := openPack(strings.TrimSuffix(idx, ".idx")+".pack", s)
		if err != nil {
			t.Fatal(err)
		}
		defer p.f.Close()
		for _, line := range strings.Split(r.Git("verify-pack", "-v", idx), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 || len(f[0]) != 40 {
				continue
			}
			off, _ := strconv.ParseInt(f[4], 10, 64)
			if e, err := p.header(off); err == nil && e.typ == want {
				return true
			}
		}
	}
	return false
}

func checkAll(t *testing.T, r *gittest.Repo) {
	s := New(r.Path(".git"))
	all := catAll(t, r)
	if len(all) < 60 {
		t.Fatalf("only %d objects", len(all))
	}
	for h, want := range all {
		typ, data, err := s.Read(plumbing.AnyObject, h)
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		if typ.String() != want.typ || !bytes.Equal(data, want.data) {
			t.Fatalf("%s: read %s of %d bytes, git reads %s of %d", h, typ, len(data), want.typ, len(want.data))
		}
		if n, err := s.Size(h); err != nil || n != int64(len(want.data)) {
			t.Fatalf("%s: Size %d, %v; want %d", h, n, err, len(want.data))
		}
		hashes, err := s.HashesWithPrefix(h.String()[:5])
		if err != nil || !containsHash(hashes, h) {
			t.Fatalf("%s: prefix lookup gives %v, %v", h, hashes, err)
		}
	}
	if hs, err := s.HashesWithPrefix("0"); err != nil {
		t.Fatal(err)
	} else {
		for _, h := range hs {
			if _, ok := all[h]; !ok || !strings.HasPrefix(h.String(), "0") {
				t.Fatalf("prefix 0 gives %s", h)
			}
		}
	}
}

func containsHash(hs []plumbing.Hash, h plumbing.Hash) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

// Write stores a loose object git reads back, read-only, through a
// temporary file it does not leave; writing it again changes nothing.
func TestWriteLoose(t *testing.T) {
	r := gittest.New(t)
	s := New(r.Path(".git"))
	data := []byte("written by hgate\n")
	h, err := s.Write(plumbing.BlobObject, data)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Git("cat-file", "blob", h.String()); got != string(data) {
		t.Fatalf("git reads %q", got)
	}
	fi, err := os.Lstat(s.loosePath(h))
	if err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("loose file: %v, %v", fi, err)
	}
	if h2, err := s.Write(plumbing.BlobObject, data); err != nil || h2 != h {
		t.Fatalf("second write: %s, %v", h2, err)
	}
	if tmps, _ := filepath.Glob(r.Path(".git/objects/pack/tmp_obj_*")); len(tmps) != 0 {
		t.Fatalf("left %v", tmps)
	}
	if _, _, err := s.Read(plumbing.TreeObject, h); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("a blob read as a tree: %v", err)
	}
}

// A loose object whose content was swapped, or whose header lies about its
// size, is an error.
func TestReadLooseDamaged(t *testing.T) {
	r := gittest.New(t)
	s := New(r.Path(".git"))
	h, _ := s.Write(plumbing.BlobObject, []byte("one\n"))
	other, _ := s.Write(plumbing.BlobObject, []byte("two\n"))
	os.Chmod(s.loosePath(h), 0o644)
	swapped, _ := os.ReadFile(s.loosePath(other))
	os.WriteFile(s.loosePath(h), swapped, 0o644)
	var ce *CorruptObjectError
	if _, _, err := s.Read(plumbing.AnyObject, h); !errors.As(err, &ce) {
		t.Fatalf("swapped content: %v", err)
	}
	var z bytes.Buffer
	zw := newZlib(&z)
	zw.Write([]byte("blob 9\x00one\n"))
	zw.Close()
	os.WriteFile(s.loosePath(h), z.Bytes(), 0o644)
	if _, _, err := s.Read(plumbing.AnyObject, h); err == nil || !strings.Contains(err.Error(), "header says 9") {
		t.Fatalf("short content: %v", err)
	}
}

// FuzzPatchDelta checks the delta patcher against go-git's: whatever both
// accept gives the same bytes. (go-git refuses a few deltas git applies,
// such as one against an empty base; every object read is checked against
// its id anyway.)
func FuzzPatchDelta(f *testing.F) {
	f.Add([]byte("hello, world"), []byte{12, 14, 0x91, 0, 5, 2, '!', '!', 0x91, 5, 7})
	f.Add([]byte(""), []byte{0, 3, 3, 'a', 'b', 'c'})
	f.Add([]byte("abc"), []byte{3, 0})
	f.Fuzz(func(t *testing.T, base, delta []byte) {
		got, err := patchDelta(base, delta)
		if err != nil {
			return
		}
		want, werr := packfile.PatchDelta(base, delta)
		if werr == nil && !bytes.Equal(got, want) {
			t.Fatalf("patchDelta(%q, %x) = %q; go-git: %q, %v", base, delta, got, want, werr)
		}
	})
}

func newZlib(w io.Writer) io.WriteCloser { return zlibWriter(w) }
