package pattern

import (
	"strings"
	"testing"
)

// wildmatchTests pin git's wildmatch, feature by feature. pathname is
// WM_PATHNAME: set for patterns with a slash, where "*", "?" and brackets
// stop at "/". FuzzMatchVsGit checks the rows against git too.
var wildmatchTests = []struct {
	pat, text string
	pathname  bool
	want      bool
}{
	// *
	{"*", "abc", true, true},
	{"*", "", true, true},
	{"*", "a/b", true, false},
	{"*", "a/b", false, true},
	{"a*", "a", true, true},
	{"a*c", "abbbc", true, true},
	{"a*c", "ab/c", true, false},
	{"a*c", "ab/c", false, true},
	{"*c", "ab", true, false},
	{"a*b*c", "axbxc", true, true},
	{"a*b*c", "axbx", true, false},
	{"*/b", "a/b", true, true},
	{"*/b", "b", true, false},
	{"*/b", "a/x/b", true, false},
	{"a/*", "a/", true, true},
	{"a/*/c", "a/b/c", true, true},
	{"*.md", "x.md", false, true},
	{"*?", "", true, false},
	{"*[a]", "xxa", true, true},
	{"*\\*", "ab*", true, true},
	{"*x", "a/x", true, false},     // the literal fast path stops at "/"
	{"a*?b", "ax/yb", true, false}, // "*" gives up at a "/" the rest cannot match
	// ** as a whole component: any number of directories
	{"**", "a/b/c", true, true},
	{"**", "", true, true},
	{"**/b", "b", true, true},
	{"**/b", "a/b", true, true},
	{"**/b", "a/x/b", true, true},
	{"**/b", "a/xb", true, false},
	{"a/**", "a/b", true, true},
	{"a/**", "a/b/c", true, true},
	{"a/**", "a", true, false},
	{"a/**/b", "a/b", true, true},
	{"a/**/b", "a/x/y/b", true, true},
	{"a/**/b", "a/xb", true, false},
	{"a/**/b/**/c", "a/b/x/b/y/c", true, true},
	{"a/***/b", "a/x/b", true, true},
	{"a/**\\/b", "a/x/b", true, true},
	// ** not a whole component: a plain *
	{"a**b", "axb", true, true},
	{"a**b", "ax/b", true, false},
	{"a/**b", "a/xb", true, true},
	{"a/**b", "a/x/b", true, false},
	{"**b", "x/b", true, false},
	{"a**", "a/b", true, false},
	{"a**/b", "ax/b", true, true},
	{"a**/b", "a/x/b", true, false},
	{"a**b", "ax/b", false, true},
	// ?
	{"?", "a", true, true},
	{"?", "", true, false},
	{"?", "ab", true, false},
	{"a?c", "a/c", true, false},
	{"a?c", "a/c", false, true},
	{"??", "é", true, true}, // bytes, not runes
	// brackets
	{"[abc]", "b", true, true},
	{"[abc]", "d", true, false},
	{"[a-c]", "b", true, true},
	{"[a-c]", "d", true, false},
	{"[c-a]", "b", true, false},
	{"[a-]", "-", true, true},
	{"[-a]", "-", true, true},
	{"[a-c-e]", "-", true, true},
	{"[a-c-e]", "d", true, false},
	{"[!a]", "b", true, true},
	{"[!a]", "a", true, false},
	{"[^a]", "b", true, true},
	{"[^a]", "a", true, false},
	{"[!]", "!", true, false}, // unclosed: "]" right after "[!" is a member
	{"[]]", "]", true, true},
	{"[]a]", "a", true, true},
	{"[!]a]", "]", true, false},
	{"[!]a]", "b", true, true},
	{"[^]]", "x", true, true},
	{"[\\]]", "]", true, true},
	{"[\\-]", "-", true, true},
	{"[a\\-c]", "b", true, false},
	{"[a-\\c]", "b", true, true},
	{"[a-\\", "b", true, false},
	{"[\\", "\\", true, false},
	{"[/]", "/", true, false},
	{"[/]", "/", false, true},
	{"[!a]", "/", true, false},
	{"[a", "a", true, false},
	{"a[", "a[", true, false},
	{"[ab", "[ab", true, false},
	{"[[]", "[", true, true},
	{"[[:]", ":", true, true},
	{"[[:]", "[", true, true},
	{"[[:a]", "a", true, true},
	{"[x[:a]", "x", true, true},
	{"[[:alpha:]", "a", true, false}, // unclosed after the class
	{"[[:alpha", "a", true, false},
	{"[[:alpha:]-z]", "-", true, true},
	{"[a-[:alpha:]]", "a]", true, true}, // a range a-[ (empty), then ":alpha:" members, then "]"
	{"[a-[:alpha:]]", "p]", true, true},
	{"[a-[:alpha:]]", "[]", true, false},
	// POSIX classes
	{"[[:alpha:]]", "q", true, true},
	{"[[:alpha:]]", "Q", true, true},
	{"[[:alpha:]]", "1", true, false},
	{"[[:alnum:]]", "1", true, true},
	{"[[:alnum:]]", "_", true, false},
	{"[[:digit:]]", "7", true, true},
	{"[[:digit:]]", "a", true, false},
	{"[[:xdigit:]]", "f", true, true},
	{"[[:xdigit:]]", "F", true, true},
	{"[[:xdigit:]]", "g", true, false},
	{"[[:lower:]]", "a", true, true},
	{"[[:lower:]]", "A", true, false},
	{"[[:upper:]]", "A", true, true},
	{"[[:upper:]]", "a", true, false},
	{"[[:space:]]", " ", true, true},
	{"[[:space:]]", "\t", true, true},
	{"[[:space:]]", "\n", true, true},
	{"[[:space:]]", "\r", true, true},
	{"[[:space:]]", "x", true, false},
	{"[[:space:]]", "\v", true, false}, // git's isspace: space, \t, \n, \r only
	{"[[:space:]]", "\f", true, false},
	{"[[:blank:]]", " ", true, true},
	{"[[:blank:]]", "\t", true, true},
	{"[[:blank:]]", "\n", true, false},
	{"[[:cntrl:]]", "\x01", true, true},
	{"[[:cntrl:]]", "\x7f", true, true},
	{"[[:cntrl:]]", " ", true, false},
	{"[[:graph:]]", "~", true, true},
	{"[[:graph:]]", " ", true, false},
	{"[[:print:]]", " ", true, true},
	{"[[:print:]]", "\x7f", true, false},
	{"[[:punct:]]", ".", true, true},
	{"[[:punct:]]", "a", true, false},
	{"[[:punct:]]", " ", true, false},
	{"[[:alpha:]]", "\xe9", true, false},
	{"[[:digit:][:upper:]]", "A", true, true},
	{"[![:digit:]]", "a", true, true},
	{"[![:digit:]]", "1", true, false},
	{"[[:bogus:]]", "b", true, false},
	{"[[:bogus:]]", ":", true, false},
	{"[[:Alpha:]]", "a", true, false},
	{"[[::]]", ":", true, false},
	// escapes
	{"\\*", "*", true, true},
	{"\\*", "a", true, false},
	{"\\?", "?", true, true},
	{"\\[a]", "[a]", true, true},
	{"\\a", "a", true, true},
	{"\\\\", "\\", true, true},
	{"a\\", "a", true, false},
	{"a\\", "a\\", true, false}, // a trailing backslash matches nothing
	// literal characters, case
	{"abc", "abc", true, true},
	{"abc", "ABC", true, false},
	{"abc", "ab", true, false},
	{"ab", "abc", true, false},
	{"", "", true, true},
}

func TestWildmatch(t *testing.T) {
	for _, tt := range wildmatchTests {
		if got := wildmatch(tt.pat, tt.text, tt.pathname); got != tt.want {
			t.Errorf("wildmatch(%q, %q, pathname %v) = %v, want %v", tt.pat, tt.text, tt.pathname, got, tt.want)
		}
	}
}

// decideTests pin how the lines of one ignore file are read and which line
// decides a path (0: none), as git check-ignore reports it (FuzzMatchVsGit
// checks the rows against git).
var decideTests = []struct {
	name  string
	lines string
	base  string
	path  string
	isDir bool
	want  int
}{
	{"name at the root", "a.txt", "", "a.txt", false, 1},
	{"name at any depth", "a.txt", "", "x/y/a.txt", false, 1},
	{"name matches a directory too", "a", "", "x/a", true, 1},
	{"glob without a slash: the base name", "*.md", "", "d/x.md", false, 1},
	{"glob without a slash does not span folders", "d*x.md", "", "d/x.md", false, 0},
	{"suffix fast path", "*.md", "", "x.mdx", false, 0},
	{"suffix fast path, bare suffix", "*.md", "", ".md", false, 1},
	{"with a slash: anchored", "d/a.txt", "", "d/a.txt", false, 1},
	{"with a slash: not deeper", "d/a.txt", "", "x/d/a.txt", false, 0},
	{"leading slash anchors", "/a.txt", "", "a.txt", false, 1},
	{"leading slash: not deeper", "/a.txt", "", "d/a.txt", false, 0},
	{"only one leading slash is an anchor", "//a.txt", "", "a.txt", false, 0},
	{"glob with a slash", "d/*.go", "", "d/x.go", false, 1},
	{"glob with a slash: * stops at /", "d/*.go", "", "d/e/x.go", false, 0},
	{"** with a slash", "d/**/x.go", "", "d/e/f/x.go", false, 1},
	{"** right after the literal start crosses folders, as in git", "/a**/b", "", "a/x/b", false, 1},
	{"** right after the literal start: trailing", "d/a**", "", "d/a/b/c", false, 1},
	{"** after a glob is a *", "*/a**/b", "", "x/a/y/b", false, 0},
	{"** after a glob is a *: within a name", "*/a**/b", "", "x/ay/b", false, 1},
	{"trailing slash: directories only", "out/", "", "out", true, 1},
	{"trailing slash: not a file", "out/", "", "out", false, 0},
	{"trailing slash: any depth", "out/", "", "x/out", true, 1},
	{"trailing slash with a slash inside", "a/out/", "", "a/out", true, 1},
	{"trailing slash: anchored only by a slash before it", "/out/", "", "x/out", true, 0},
	{"only one trailing slash is dropped: a// matches nothing", "a//", "", "a", true, 0},
	{"only one trailing slash is dropped: not at any depth", "a//", "", "x/a", true, 0},
	{"two slashes alone match nothing", "//", "", "x", true, 0},
	{"two slashes alone, negated", "*\n!//", "", "x", true, 1},
	{"negation", "*.md\n!README.md", "", "README.md", false, 2},
	{"negation: others stay", "*.md\n!README.md", "", "x.md", false, 1},
	{"last line wins", "!x\nx", "", "x", false, 2},
	{"escaped !", "\\!x", "", "!x", false, 1},
	{"escaped #", "\\#x", "", "#x", false, 1},
	{"comment", "#x", "", "#x", false, 0},
	{"negated #", "!#x\n*", "", "#x", false, 2},
	{"blank lines count", "\n\nx", "", "x", false, 3},
	{"only spaces", "   ", "", "   ", false, 0},
	{"trailing spaces are dropped", "x  ", "", "x", false, 1},
	{"trailing spaces are dropped, not kept", "x  ", "", "x  ", false, 0},
	{"escaped trailing space is kept", "x\\ ", "", "x ", false, 1},
	{"escaped trailing space: not without", "x\\ ", "", "x", false, 0},
	{"spaces before an escaped one", "x \\ ", "", "x  ", false, 1},
	{"spaces after an escaped one are dropped", "x\\  ", "", "x ", false, 1},
	{"an escaped backslash does not escape the space after it", "x\\\\ ", "", "x\\", false, 1},
	{"an escaped backslash: the space is dropped", "x\\\\ ", "", "x\\ ", false, 0},
	{"three backslashes: the space is escaped", "x\\\\\\ ", "", "x\\ ", false, 1},
	{"leading spaces are kept", " x", "", " x", false, 1},
	{"tab is not trimmed", "x\t", "", "x\t", false, 1},
	{"CRLF", "x\r\ny", "", "x", false, 1},
	{"a byte order mark at the start is skipped", "\ufeffx", "", "x", false, 1},
	{"a byte order mark on another line is kept", "y\n\ufeffx", "", "x", false, 0},
	{"a NUL ends the line, as git reads C strings", "x\x00y", "", "x", false, 1},
	{"a NUL ends the line: the rest is no pattern", "x\x00y", "", "x\x00y", false, 0},
	{"case sensitive", "README.md", "", "readme.md", false, 0},
	{"case sensitive glob", "*.MD", "", "x.md", false, 0},
	{"case sensitive class", "[A-Z]", "", "a", false, 0},
	{"lone !", "!", "", "!", false, 0},
	{"lone /", "/", "", "x", true, 0},
	{"base: below it", "x", "d/", "d/x", false, 1},
	{"base: deeper", "x", "d/", "d/e/x", false, 1},
	{"base: elsewhere", "x", "d/", "e/x", false, 0},
	{"base: anchored", "e/x", "d/", "d/e/x", false, 1},
	{"base: anchored elsewhere", "e/x", "d/", "e/x", false, 0},
	{"base: glob", "e/*", "d/", "d/e/x", false, 1},
	{"base: prefix of a name", "x", "d/", "dd/x", false, 0},
}

func TestDecide(t *testing.T) {
	for _, tt := range decideTests {
		l := Parse(tt.lines, "test", tt.base)
		got := 0
		if r := l.Decide(tt.path, tt.isDir); r != nil {
			got = r.LineNo
		}
		if got != tt.want {
			t.Errorf("%s: %q in %q decides %q (dir %v) by line %d, want %d", tt.name, tt.lines, tt.base, tt.path, tt.isDir, got, tt.want)
		}
	}
}

func TestRuleFields(t *testing.T) {
	l := Parse("# c\n!keep/  \n", ".gitignore", "")
	if len(l) != 1 {
		t.Fatalf("got %d rules, want 1", len(l))
	}
	r := l[0]
	if r.Line != "!keep/  " || r.Source != ".gitignore" || r.LineNo != 2 || !r.Negate {
		t.Errorf("rule = %+v", r)
	}
}

// matcherTests pin the allow list: gitignore lines, where a match also covers
// everything below a matched folder and a later line, a "!" one included,
// decides over an earlier one for the path or any of its parents.
var matcherTests = []struct {
	allow string // lines
	path  string
	isDir bool
	want  bool
}{
	{"agent/agent.py", "agent/agent.py", false, true},
	{"agent/agent.py", "agent/other.py", false, false},
	{"agent/agent.py", "x/agent/agent.py", false, false},
	{"PROGRAM.md", "PROGRAM.md", false, true},
	{"PROGRAM.md", "docs/PROGRAM.md", false, true},
	{"PROGRAM.md", "program.md", false, false},
	{"agent/", "agent/a.py", false, true},
	{"agent/", "agent/sub/b.py", false, true},
	{"agent/", "agent", true, true},
	{"agent/", "agent", false, false},
	{"agent/", "x/agent/a.py", false, true},
	{"agent", "agent/a.py", false, true},
	{"agent//", "agent/a.py", false, false}, // a pattern "agent/" that no path matches, as in git
	{"/agent", "x/agent/a.py", false, false},
	{"src/**/x.go", "src/x.go", false, true},
	{"src/**/x.go", "src/a/b/x.go", false, true},
	{"src/**/x.go", "src/a/b/y.go", false, false},
	{"src/a**", "src/a/b/c.go", false, true}, // git matches the literal "src/a" first, then "**" alone
	{"*.py", "a/b.py", false, true},
	{"agent/*.py", "agent/a.py", false, true},
	{"agent/*.py", "agent/sub/a.py", false, false},
	// a "!" line carves out of an earlier folder, unlike in a .gitignore
	{"agent/\n!agent/secret.py", "agent/secret.py", false, false},
	{"agent/\n!agent/secret.py", "agent/a.py", false, true},
	{"agent/\n!agent/frozen/", "agent/frozen/a.py", false, false},
	{"agent/\n!agent/frozen/", "agent/frozen", true, false},
	{"agent/\n!agent/frozen/", "agent/frozenx", false, true},
	{"*.py\n!tests/", "tests/t.py", false, false},
	// a later line decides over an earlier "!"
	{"!agent/secret.py\nagent/", "agent/secret.py", false, true},
	// comments, blanks, trailing spaces
	{"# agent/\n\nagent/a.py  ", "agent/a.py", false, true},
	{"# agent/", "# agent", true, false},
	// the path is trimmed of slashes
	{"agent/", "/agent/a.py/", false, true},
	{"x", "", false, false},
}

func TestMatcher(t *testing.T) {
	for _, tt := range matcherTests {
		m := NewMatcher(strings.Split(tt.allow, "\n"))
		if got := m.Match(tt.path, tt.isDir); got != tt.want {
			t.Errorf("allow %q: Match(%q, dir %v) = %v, want %v", tt.allow, tt.path, tt.isDir, got, tt.want)
		}
	}
}

func TestMatcherEmpty(t *testing.T) {
	var nilM *Matcher
	for _, m := range []*Matcher{nilM, NewMatcher(nil), NewMatcher([]string{"", "# only a comment", "   "})} {
		if !m.Empty() {
			t.Errorf("%+v: not empty", m)
		}
		if m.Match("anything", false) {
			t.Errorf("%+v: matches", m)
		}
	}
	if NewMatcher([]string{"x"}).Empty() {
		t.Errorf("one pattern: empty")
	}
}

// Empty reports whether the matcher has no patterns.
func (m *Matcher) Empty() bool { return m == nil || len(m.list) == 0 }
