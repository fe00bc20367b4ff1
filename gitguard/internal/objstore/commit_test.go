package objstore

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/hgate/hgate/internal/gittest"
)

// gitObjects makes commits and trees the ways the git CLI writes them and
// returns their ids, by name.
func gitObjects(t *testing.T) (*gittest.Repo, map[string]string) {
	r := gittest.New(t)
	ids := map[string]string{}
	commit := func(name string, env []string, args ...string) {
		t.Helper()
		r.Git("add", "-A")
		if _, err := r.GitEnv(env, append([]string{"commit", "-q", "--allow-empty"}, args...)...); err != nil {
			t.Fatal(err)
		}
		ids[name] = r.Head()
	}
	config := func(kv ...string) (env []string) {
		env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(kv)/2))
		for i := 0; i < len(kv); i += 2 {
			env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i/2, kv[i]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i/2, kv[i+1]))
		}
		return env
	}
	r.WriteFiles(map[string]string{"a.txt": "a\n", "a/b.txt": "b\n", "a-b": "x\n", "a.b/c": "c\n", "a0": "0\n", "sub/deeper/d": "d\n"})
	r.Chmod("a0", 0o755)
	r.Symlink("a.txt", "link")
	commit("root", nil, "-m", "root")
	r.Git("checkout", "-q", "-b", "side")
	r.Write("side.txt", "side\n")
	commit("odd people", []string{
		"GIT_AUTHOR_NAME=  Odd   Name\t", "GIT_AUTHOR_EMAIL=odd+x@example.org", "GIT_AUTHOR_DATE=1700000000 -0230",
		"GIT_COMMITTER_NAME=Ünïcödé", "GIT_COMMITTER_DATE=1700000123 +1345",
	}, "-m", "subject\n\nbody line one\n  indented line\n\n\ntrailing blank lines kept")
	r.Git("checkout", "-q", "main")
	r.Write("main.txt", "main\n")
	commit("multi-line", nil, "-m", "subject", "-m", "second paragraph\nwith two lines")
	if _, err := r.GitEnv(nil, "merge", "-q", "--no-ff", "-m", "merge side", "side"); err != nil {
		t.Fatal(err)
	}
	ids["merge"] = r.Head()
	commit("encoding", config("i18n.commitEncoding", "ISO-8859-1"), "-m", "latin")
	commit("empty message", nil, "--allow-empty-message", "-m", "")
	// commit-tree writes stdin as it is: a message without a trailing newline.
	out, err := r.Sh("printf 'no newline at the end' | git commit-tree HEAD^{tree} -p HEAD")
	if err != nil {
		t.Fatal(out, err)
	}
	ids["no trailing newline"] = strings.TrimSpace(out)
	if _, err := exec.LookPath("ssh-keygen"); err == nil {
		// An SSH signature is a gpgsig header, as an OpenPGP one is, without a keyring.
		key := t.TempDir() + "/key"
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key).CombinedOutput(); err != nil {
			t.Fatal(string(out), err)
		}
		commit("signed", config("gpg.format", "ssh", "user.signingkey", key), "-S", "-m", "signed")
	}
	for _, name := range []string{"root", "merge", "odd people"} {
		ids[name+" tree"] = strings.TrimSpace(r.Git("rev-parse", ids[name]+"^{tree}"))
		ids[name+" subtree"] = strings.TrimSpace(r.Git("rev-parse", ids[name]+":a"))
	}
	return r, ids
}

// Every commit and tree git writes decodes and encodes back to the same
// bytes, so to the same id, and decodes to what go-git's object package reads.
func TestDecodeEncodeGitObjects(t *testing.T) {
	r, ids := gitObjects(t)
	if _, ok := ids["signed"]; !ok {
		t.Log("no ssh-keygen: no signed commit")
	}
	s, err := open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, id := range ids {
		t.Run(name, func(t *testing.T) {
			h := plumbing.NewHash(id)
			typ, data, err := s.Read(plumbing.AnyObject, h)
			if err != nil {
				t.Fatal(err)
			}
			switch typ {
			case plumbing.CommitObject:
				c, err := s.Commit(h)
				if err != nil {
					t.Fatal(err)
				}
				if got := c.Encode(); !bytes.Equal(got, data) {
					t.Fatalf("re-encoded:\n%s\ngit wrote:\n%s", got, data)
				}
				want, err := object.GetCommit(goGit(r.Dir), h)
				if err != nil {
					t.Fatal(err)
				}
				sameAsGoGit(t, c, want)
			case plumbing.TreeObject:
				es, err := s.Tree(h)
				if err != nil {
					t.Fatal(err)
				}
				if got := AppendTree(nil, es); plumbing.ComputeHash(plumbing.TreeObject, got) != h {
					t.Fatalf("re-encoded tree does not hash to %s", h)
				}
				if !slices.IsSortedFunc(es, func(a, b Entry) int { return strings.Compare(a.SortKey(), b.SortKey()) }) {
					t.Errorf("entries not in git's order: %v", es)
				}
				want, err := object.GetTree(goGit(r.Dir), h)
				if err != nil {
					t.Fatal(err)
				}
				if len(es) != len(want.Entries) {
					t.Fatalf("%d entries, go-git reads %d", len(es), len(want.Entries))
				}
				for i, e := range want.Entries {
					if es[i] != (Entry{Name: e.Name, Mode: e.Mode, Hash: e.Hash}) {
						t.Errorf("entry %d: %+v, go-git reads %+v", i, es[i], e)
					}
				}
			default:
				t.Fatalf("%s is a %s", id, typ)
			}
		})
	}
	// The cases the repository must hold to prove anything.
	c, _ := s.Commit(plumbing.NewHash(ids["merge"]))
	if len(c.ParentHashes) != 2 {
		t.Errorf("merge has %d parents", len(c.ParentHashes))
	}
	c, _ = s.Commit(plumbing.NewHash(ids["odd people"]))
	if _, off := c.Author.When.Zone(); c.Author.Name != "Odd   Name" || off != -(2*3600+30*60) {
		t.Errorf("author %q at offset %d", c.Author.Name, off)
	}
	c, _ = s.Commit(plumbing.NewHash(ids["no trailing newline"]))
	if c.Message != "no newline at the end" {
		t.Errorf("message %q", c.Message)
	}
	if id, ok := ids["signed"]; ok {
		c, _ = s.Commit(plumbing.NewHash(id))
		if len(c.Extra) != 1 || c.Extra[0].Key != "gpgsig" || !strings.Contains(c.Extra[0].Value, "\n") {
			t.Errorf("signed commit's extra headers: %q", c.Extra)
		}
	}
	c, _ = s.Commit(plumbing.NewHash(ids["encoding"]))
	if len(c.Extra) != 1 || c.Extra[0] != (Header{"encoding", "ISO-8859-1"}) {
		t.Errorf("encoding commit's extra headers: %q", c.Extra)
	}
}

// sameAsGoGit compares a commit with go-git's reading of it.
func sameAsGoGit(t *testing.T, c *Commit, want *object.Commit) {
	t.Helper()
	if c.TreeHash != want.TreeHash || !slices.Equal(c.ParentHashes, want.ParentHashes) || c.Message != want.Message {
		t.Errorf("tree %s parents %v message %q; go-git reads tree %s parents %v message %q", c.TreeHash, c.ParentHashes, c.Message, want.TreeHash, want.ParentHashes, want.Message)
	}
	for _, p := range []struct{ got, want Signature }{
		{c.Author, Signature(want.Author)},
		{c.Committer, Signature(want.Committer)},
	} {
		_, o1 := p.got.When.Zone()
		_, o2 := p.want.When.Zone()
		if p.got.Name != p.want.Name || p.got.Email != p.want.Email || !p.got.When.Equal(p.want.When) || o1 != o2 {
			t.Errorf("signature %+v, go-git reads %+v", p.got, p.want)
		}
	}
}

// WriteCommit writes what go-git's encoder wrote before hgate had its own,
// so commits made by an older hgate and this one have the same ids.
func TestWriteCommitAsGoGit(t *testing.T) {
	r := gittest.New(t)
	r.Write("a", "a\n")
	head := plumbing.NewHash(r.Commit("one"))
	s, err := open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := s.TreeOf(head)
	if err != nil {
		t.Fatal(err)
	}
	for _, when := range []time.Time{
		time.Unix(1700000000, 0).UTC(),
		time.Unix(1700000000, 0).In(time.FixedZone("", -(9*3600 + 30*60))),
		time.Unix(1700000000, 0).In(time.FixedZone("", 5*3600+45*60)),
	} {
		sig := Signature{Name: "hgate loop", Email: "hgate@localhost", When: when}
		for _, parents := range [][]plumbing.Hash{nil, {head}, {head, head}} {
			h, err := s.WriteCommit(tree, "message\n\nbody\n", sig, parents...)
			if err != nil {
				t.Fatal(err)
			}
			gg := &object.Commit{Author: object.Signature(sig), Committer: object.Signature(sig), Message: "message\n\nbody\n", TreeHash: tree, ParentHashes: parents}
			o := &plumbing.MemoryObject{}
			if err := gg.Encode(o); err != nil {
				t.Fatal(err)
			}
			if o.Hash() != h {
				t.Errorf("at %s with %d parents: %s, go-git encodes %s", when, len(parents), h, o.Hash())
			}
			if out := r.Git("cat-file", "-t", h.String()); strings.TrimSpace(out) != "commit" {
				t.Errorf("git reads %s as %q", h, out)
			}
		}
	}
	if out, err := r.Fsck("--strict", "--no-dangling"); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
}

// Headers in an order git does not write still give the tree and parents git
// reads: a parent line after another header is not a parent, and an unknown
// header before the author is kept.
func TestDecodeCommitLenient(t *testing.T) {
	tree := strings.Repeat("1", 40)
	p := strings.Repeat("2", 40)
	for _, tc := range []struct {
		name, raw string
		parents   int
		author    string
		message   string
	}{
		{"header before author", "tree " + tree + "\nparent " + p + "\nx-tool 1\nauthor A <a@b> 5 +0000\ncommitter C <c@d> 6 -0000\n\nm\n", 1, "A", "m\n"},
		{"late parent line", "tree " + tree + "\nauthor A <a@b> 5 +0000\nparent " + p + "\ncommitter C <c@d> 6 +0000\n\nm", 0, "A", "m"},
		{"bad signature", "tree " + tree + "\nauthor nobody\ncommitter C <c@d> x +0000\n\n", 0, "nobody", ""},
		{"headers only", "tree " + tree + "\nparent " + p + "\n", 1, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeCommit([]byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if c.TreeHash.String() != tree || len(c.ParentHashes) != tc.parents || c.Author.Name != tc.author || c.Message != tc.message {
				t.Errorf("got %+v", c)
			}
		})
	}
	for _, bad := range []string{"", "parent " + p + "\n", "tree " + tree[1:] + "\n", "tree " + tree + "\nparent " + strings.Repeat("A", 40) + "\n"} {
		if _, err := DecodeCommit([]byte(bad)); err == nil {
			t.Errorf("%q decodes", bad)
		}
	}
}

// A commit that decodes encodes to bytes that decode to the same commit, and
// one git could have written (tree, parents, author, committer, others, in
// that order, no -0000 zone) encodes to its own bytes.
func FuzzCommitRoundTrip(f *testing.F) {
	tree := "tree " + strings.Repeat("a", 40) + "\n"
	f.Add([]byte(tree + "author A <a@b> 1700000000 -0230\ncommitter B <b@c> 1700000001 +1345\n\nmsg\n"))
	f.Add([]byte(tree + "parent " + strings.Repeat("b", 40) + "\nparent " + strings.Repeat("c", 40) + "\nauthor  <> 0 +0000\ncommitter B <b@c> 1 +0000\nencoding latin1\ngpgsig -----BEGIN-----\n \n line\n -----END-----\n\nno newline"))
	f.Add([]byte(tree + "author Odd   Name <x> 1 +0100\ncommitter C <c> 2 +0000\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommit(data)
		if err != nil {
			return
		}
		enc := c.Encode()
		c2, err := DecodeCommit(enc)
		if err != nil {
			t.Fatalf("re-encoded commit does not decode: %v\n%q", err, enc)
		}
		if again := c2.Encode(); !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable:\n%q\n%q", enc, again)
		}
		if !bytes.Equal(enc, data) && gitWritten(data, c) {
			t.Fatalf("a commit as git writes it re-encodes differently:\n%q\n%q", data, enc)
		}
	})
}

// gitWritten reports whether data is laid out as git writes a commit (tree,
// parents, author, committer, then "key value" headers with continuation
// lines, a blank line, the message), so its encoding must give back the same
// bytes.
func gitWritten(data []byte, c *Commit) bool {
	headers, _, ok := bytes.Cut(data, []byte("\n\n"))
	if !ok {
		return false
	}
	lines := strings.Split(string(headers), "\n")
	n := 1 + len(c.ParentHashes)
	if len(lines) < n+2 {
		return false
	}
	for i, key := range []string{"author ", "committer "} {
		v, ok := strings.CutPrefix(lines[n+i], key)
		if !ok || string(appendSignature(nil, decodeSignature([]byte(v)))) != v {
			return false
		}
	}
	for _, l := range lines[n+2:] {
		if !strings.Contains(l, " ") {
			return false
		}
	}
	return true
}

// A tree that decodes encodes back to the same bytes unless a mode is
// spelled otherwise than git spells it (zero-padded, say).
func FuzzTreeRoundTrip(f *testing.F) {
	h := strings.Repeat("\x01", 20)
	f.Add([]byte("100644 a.txt\x00" + h + "40000 a\x00" + h + "120000 link\x00" + h))
	f.Add([]byte("040000 padded\x00" + h))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := DecodeTree(data)
		if err != nil {
			return
		}
		enc := AppendTree(nil, es)
		if bytes.Equal(enc, data) {
			return
		}
		again, err := DecodeTree(enc)
		if err != nil || !slices.Equal(again, es) {
			t.Fatalf("re-encoded tree decodes to %v (%v), was %v", again, err, es)
		}
		rest := data
		for _, e := range es {
			mode, _, _ := bytes.Cut(rest, []byte(" "))
			if string(mode) != ModeText(e.Mode) {
				return // a mode spelled another way
			}
			rest = rest[len(mode)+1+len(e.Name)+1+len(e.Hash):]
		}
		t.Fatalf("a tree with git's modes re-encodes differently:\n%q\n%q", data, enc)
	})
}
