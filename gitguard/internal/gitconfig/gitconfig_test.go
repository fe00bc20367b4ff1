package gitconfig

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// list renders a config as `git config --list -z` does: "name\nvalue\x00",
// or "name\x00" for a key without "=".
func list(c *Config) string {
	var b strings.Builder
	for _, e := range c.Entries {
		b.WriteString(e.Name)
		if !e.NoValue {
			b.WriteString("\n" + e.Value)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// cases are the format's corner cases; want is the -z listing, "ERR" a file
// git refuses. Each is also checked against git itself (TestSameAsGit).
var cases = []struct{ name, in, want string }{
	{"empty", "", ""},
	{"simple", "[core]\n\tbare = false\n", "core.bare\nfalse\x00"},
	{"case", "[CoRe]\n\tHooksPath = /X\n", "core.hookspath\n/X\x00"},
	{"subsection keeps case", "[remote \"Origin\"]\nURL = u\n", "remote.Origin.url\nu\x00"},
	{"old dotted form lowers all", "[Branch.Main]\nk=v\n", "branch.main.k\nv\x00"},
	{"subsection escapes", "[a \"x\\\"y\\\\z\\q\"]\nk=v\n", "a.x\"y\\zq.k\nv\x00"},
	{"no value", "[a]\nflag\n", "a.flag\x00"},
	{"empty value", "[a]\nk =\n", "a.k\n\x00"},
	{"comments", "# c\n; c\n[a] ; c\nk = v # c\nj = v;c\n", "a.k\nv\x00a.j\nv\x00"},
	{"quotes keep spaces and comment chars", "[a]\nk = \"  x # y ; \"  \n", "a.k\n  x # y ; \x00"},
	{"inner whitespace", "[a]\nk =  x \t y  \n", "a.k\nx   y\x00"},
	{"escapes", "[a]\nk = a\\tb\\nc\\\\d\\\"e\\bf\n", "a.k\na\tb\nc\\d\"e\bf\x00"},
	{"unknown escape", "[a]\nk = \\q\n", "ERR"},
	{"continuation", "[a]\nk = one \\\n  two\n", "a.k\none   two\x00"},
	{"continuation at the end of the file", "[a]\nk = one\\", "a.k\none\x00"},
	{"unterminated quote", "[a]\nk = \"x\n", "ERR"},
	{"key on the header line", "[a] k = v\n", "a.k\nv\x00"},
	{"key before any section", "k = v\n", "k\nv\x00"},
	{"bad key", "[a]\n1k = v\n", "ERR"},
	{"key with dash and digit", "[a]\nk-1 = v\n", "a.k-1\nv\x00"},
	{"bad section", "[a b]\n", "ERR"},
	{"unterminated section", "[a", "ERR"},
	{"junk after subsection", "[a \"b\" ]\n", "ERR"},
	{"crlf", "[a]\r\nk = v\r\n", "a.k\nv\x00"},
	{"bom", "\xef\xbb\xbf[a]\nk=v\n", "a.k\nv\x00"},
	{"repeated", "[a]\nk=1\n[A]\nK=2\n", "a.k\n1\x00a.k\n2\x00"},
	{"include is a plain key", "[include]\npath = other\n[includeIf \"gitdir:/x/\"]\npath = y\n", "include.path\nother\x00includeif.gitdir:/x/.path\ny\x00"},
	{"no newline at the end", "[a]\nk=v", "a.k\nv\x00"},
	{"eq without space and quotes mid-value", "[a]\nk=x\"y z\"w\n", "a.k\nxy zw\x00"},
	{"key then garbage", "[a]\nk v\n", "ERR"},
	{"empty section", "[]\n", "ERR"},
}

func TestParse(t *testing.T) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.in))
			got := "ERR"
			if err == nil {
				got = list(c)
			}
			if got != tc.want {
				t.Errorf("Parse(%q) = %q (%v), want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestGet(t *testing.T) {
	c, err := Parse([]byte("[core]\nhooksPath = a\n[Core]\nHOOKSPATH = b\n[x \"Sub\"]\nk = 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := c.Get("core.hooksPath"); !ok || v != "b" {
		t.Errorf("core.hooksPath = %q %v, want the last value b", v, ok)
	}
	if v, ok := c.Get("X.Sub.K"); !ok || v != "1" {
		t.Errorf("X.Sub.K = %q %v", v, ok)
	}
	if _, ok := c.Get("x.sub.k"); ok {
		t.Error("a subsection matched in another case")
	}
	if n := len(c.GetAll("core.hookspath")); n != 2 {
		t.Errorf("GetAll: %d values", n)
	}
	var nilConfig *Config
	if _, ok := nilConfig.Get("a.b"); ok {
		t.Error("a nil config has a value")
	}
}

// gitList is git's own reading of a config file: its -z listing, or "ERR".
func gitList(t *testing.T, dir, in string) string {
	t.Helper()
	f := filepath.Join(dir, "config")
	if err := os.WriteFile(f, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--list", "-z", "--file", f)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return "ERR"
	}
	return out.String()
}

// fragments are pieces the generated configs are made of.
var fragments = []string{
	"[a]", "[A \"S s\"]", "[b.C]", "[c \"q\\\"\\\\\"]", "\n", "\n", "\n", " ", "\t", "k", "K-2",
	" = ", "=", "v", "w", "\"", "\\n", "\\t", "\\\n", "#", ";", "x y", "\r\n", "1", "[", "\\x",
}

// TestSameAsGit reads the corner cases and 300 generated files with
// this package and with `git config --list --file`: both agree on each
// entry and on which files are refused.
func TestSameAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	inputs := []string{}
	for _, tc := range cases {
		inputs = append(inputs, tc.in)
	}
	n := 300
	if testing.Short() {
		n = 60
	}
	rng := rand.New(rand.NewPCG(25, 1))
	for range n {
		var b strings.Builder
		b.WriteString("[s]\n")
		for range 1 + rng.IntN(14) {
			b.WriteString(fragments[rng.IntN(len(fragments))])
		}
		inputs = append(inputs, b.String())
	}
	refused := 0
	for _, in := range inputs {
		want := gitList(t, dir, in)
		c, err := Parse([]byte(in))
		got := "ERR"
		if err == nil {
			got = list(c)
		} else {
			refused++
		}
		if got != want {
			t.Errorf("config %q:\nours %q (%v)\ngit  %q", in, got, err, want)
		}
	}
	if refused == 0 || refused == len(inputs) {
		t.Errorf("%d of %d refused: the generated files do not cover both sides", refused, len(inputs))
	}
	t.Logf("%d files, %d refused by both", len(inputs), refused)
}
