package index

import (
	"strings"
	"testing"
)

func TestCheckIndexPath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want string // "" accepted, else a word of the error
	}{
		{"a", ""},
		{"src/d000/f.go", ""},
		{".gitignore", ""},
		{"a/.github/x", ""},
		{"a/..b/.c", ""},
		{"a/.gitx", ""},
		{"", "empty"},
		{"/a", "bad path"},
		{"a/", "bad path"},
		{"a//b", "bad path"},
		{".", "bad path"},
		{"a/./b", "bad path"},
		{"../a", "bad path"},
		{"a/..", "bad path"},
		{".git", "inside .git"},
		{"a/.GiT/config", "inside .git"},
		{"a/b\x00c", "NUL"},
		{"a\x00/../b", "NUL"},
	} {
		err := checkIndexPath(tc.path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one saying %q", tc.path, err, tc.want)
		}
	}
}
