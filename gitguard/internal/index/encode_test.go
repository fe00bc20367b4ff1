package index

import (
	"bytes"
	"crypto/sha1"
	"os"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
)

// TestEncodeIndexRoundTrip checks the lean encoder against git: the entries
// it writes are byte for byte the ones git wrote (git's file goes on with its
// extensions where ours ends), and git reads the result as the same index.
func TestEncodeIndexRoundTrip(t *testing.T) {
	long := strings.Repeat("d123456789/", 380) + "f.txt" // longer than the 12-bit name length
	tests := []struct {
		name    string
		version string
		sh      string
	}{
		{"v2 plain", "2", "true"},
		{"v2 assume unchanged", "2", "git update-index --assume-unchanged a.txt"},
		{"v2 unmerged stages", "2", "h=$(git rev-parse HEAD:a.txt); printf '100644 %s 1\\tm.txt\\n100644 %s 2\\tm.txt\\n100644 %s 3\\tm.txt\\n' $h $h $h | git update-index --index-info"},
		{"v2 submodule and long path", "2", "h=$(git rev-parse HEAD); git update-index --add --cacheinfo 160000,$h,sub; git update-index --add --cacheinfo 100644,$(git rev-parse HEAD:a.txt)," + long},
		{"v3 skip worktree and intent to add", "3", "git update-index --skip-worktree a.txt; echo n > new.txt; git add -N new.txt"},
		{"v4 prefix compression", "4", "echo n > dir/sub/new.txt; git add dir/sub/new.txt"},
		{"v4 long path", "4", "git update-index --add --cacheinfo 100644,$(git rev-parse HEAD:a.txt)," + long},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := gittest.New(t)
			r.WriteFiles(map[string]string{
				"a.txt": "a\n", "dir/b.txt": "b\n", "dir/sub/c.txt": "c\n", "dir.d/e.txt": "e\n", "dir-x": "x\n",
				"dir/10.txt": "ten\n", // 62+10 bytes: the padding is a full 8 NULs
			})
			r.Chmod("dir/b.txt", 0o755)
			r.Symlink("a.txt", "link")
			r.Commit("init")
			r.Git("update-index", "--index-version", tc.version)
			if out, err := r.Sh(tc.sh); err != nil {
				t.Fatalf("%s: %v\n%s", tc.sh, err, out)
			}
			before := r.Git("ls-files", "--stage", "--debug")
			data, err := os.ReadFile(r.Path(".git/index"))
			if err != nil {
				t.Fatal(err)
			}
			idx, err := parseIndex(data)
			if err != nil {
				t.Fatal(err)
			}
			out := Encode(idx)
			body := out[:len(out)-sha1.Size]
			if sum := sha1.Sum(body); !bytes.Equal(sum[:], out[len(body):]) {
				t.Errorf("bad checksum")
			}
			if !bytes.HasPrefix(data, body) {
				n := 0
				for n < len(body) && n < len(data) && body[n] == data[n] {
					n++
				}
				t.Fatalf("encoded index differs from git's at byte %d of %d", n, len(body))
			}
			if err := os.WriteFile(r.Path(".git/index"), out, 0o644); err != nil {
				t.Fatal(err)
			}
			if after := r.Git("ls-files", "--stage", "--debug"); after != before {
				t.Errorf("git reads a different index:\n%s\nwant:\n%s", after, before)
			}
		})
	}
}
