package human

import "testing"

// Control characters and bidirectional overrides are written out; tabs, newlines where
// kept, and every other character stay as they are.
func TestPrintable(t *testing.T) {
	for _, c := range []struct {
		in   string
		keep bool
		want string
	}{
		{"plain \t text é ✓", false, "plain \t text é ✓"},
		{"a\x1b[2Jb\rc", false, `a\x1b[2Jb\x0dc`},
		{"x\u202egnp.exe\u2066", false, `x\u202egnp.exe\u2066`},
		{"one\ntwo\x7f\u0085", true, "one\ntwo\\x7f\\x85"},
		{"one\ntwo", false, `one\x0atwo`},
	} {
		if got := Printable(c.in, c.keep); got != c.want {
			t.Errorf("Printable(%q, %v) = %q, want %q", c.in, c.keep, got, c.want)
		}
	}
}
