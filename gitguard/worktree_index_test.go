package gitguard

import "testing"

func TestUnderFile(t *testing.T) {
	files := map[string]bool{"a": true, "b/c": true}
	tests := []struct {
		path string
		want bool
	}{
		{"a", false}, {"a/x", true}, {"a/x/y", true}, {"ab/x", false},
		{"b/c", false}, {"b/c/d", true}, {"b/cd", false}, {"b/x", false}, {"x/a", false},
	}
	for _, tc := range tests {
		if got := underFile(files, tc.path); got != tc.want {
			t.Errorf("underFile(%q) = %v, want %v", tc.path, got, tc.want)
		}
	}
}
