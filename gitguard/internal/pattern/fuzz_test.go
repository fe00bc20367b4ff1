package pattern

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
)

// FuzzMatchVsGit checks the matcher against git check-ignore --no-index, the
// way FuzzIndex checks gitguard's index reader against go-git. Input: pattern
// lines and paths (one a line; a trailing "/" makes a directory, and so does
// being a parent of another path). One git call answers, for every path:
//
//   - all/.gitignore holds the lines as given: List.Decide, walked over the
//     parent directories as git walks them (the first ignored parent decides,
//     else the path itself), must pick the line git names — .gitignore files
//     decide exactly as git does;
//   - l<i>/.gitignore holds line i alone, negation dropped: a Matcher of that
//     line alone must match exactly where git ignores, and the Matcher of all
//     the lines must follow its documented rule, where hgate deliberately
//     differs from gitignore: the last line matching the path or one of its
//     parents decides, so a later "!" line can carve a path out of an allowed
//     folder (git cannot re-include a file below an ignored folder).
func FuzzMatchVsGit(f *testing.F) {
	if _, err := exec.LookPath("git"); err != nil {
		f.Skip("git is not installed: FuzzMatchVsGit compares the matcher with git check-ignore")
	}
	for _, s := range fuzzSeeds {
		f.Add(s[0], s[1])
	}
	// The table tests' rows, so that their expectations are git's; rows that
	// are no input to git (not a path, a base) are left out by newGitCase. Not
	// under -short: about 250 git calls, 3 s of the quick loop; the full suite
	// and .ci/run's fuzzing run them.
	addTableRows(f)
	root := scratchRepo(f)
	f.Fuzz(func(t *testing.T, patterns, paths string) {
		c, ok := newGitCase(patterns, paths)
		if !ok {
			return
		}
		c.check(t, root)
	})
}

// addTableRows adds the table tests' rows to FuzzMatchVsGit's seeds, except under -short.
func addTableRows(f *testing.F) {
	if testing.Short() {
		return
	}
	for _, tt := range wildmatchTests {
		if tt.pathname {
			f.Add("/"+tt.pat, tt.text)
		} else if !strings.Contains(tt.pat+tt.text, "/") {
			f.Add(tt.pat, tt.text)
		}
	}
	for _, tt := range decideTests {
		if tt.base == "" {
			f.Add(tt.lines, withSlash(tt.path, tt.isDir))
		}
	}
	for _, tt := range matcherTests {
		f.Add(tt.allow, withSlash(tt.path, tt.isDir))
	}
}

// scratchRepo makes an empty repository for check-ignore, in memory when
// /dev/shm is there: each input writes and removes a few hundred folders.
func scratchRepo(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "hgate-pattern-")
	if err != nil {
		dir = tb.TempDir()
	} else {
		tb.Cleanup(func() { os.RemoveAll(dir) })
	}
	cmd := exec.Command("git", "init", "-q", dir)
	cmd.Env = gittest.Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git init: %v: %s", err, out)
	}
	return dir
}

// fuzzSeeds are {patterns, paths}: one seed per feature the table tests name.
var fuzzSeeds = [][2]string{
	{"*.md\n!README.md", "README.md\nx.md\nd/x.md\nd/README.md\nmd\n.md"},
	{"agent/\n!agent/secret.py", "agent/a.py\nagent/secret.py\nx/agent/b.py\nagent/sub/c.py\nagent.py"},
	{"src/**/x.go\n**/y\na/**\n**", "src/x.go\nsrc/a/b/x.go\ny\nq/y\na/b/c\na/\nb"},
	{"a/**/b\n**/c/**\na**b\na/**b", "a/b\na/x/y/b\nab\naxb\nc/d\nq/c/d/e\na/xb"},
	{"?.txt\n[a-c]?\n[!a]x\n[^b]y\n[]]z\n[a-]w\n[\\]]v", "a.txt\nab.txt\nbq\ndq\nax\nbx\nby\ncy\n]z\n-w\nbw\n]v"},
	{"[[:alpha:]]1\n[[:digit:][:upper:]]2\n[[:space:]]3\n[[:punct:]]4\n[[:bogus:]]5\n[[:alpha:]6", "a1\n11\n92\nA2\na2\n 3\n\t3\n\v3\n\f3\n\r3\n.4\na4\nb5\n[6\na6\n:6"},
	{"[[:alnum:]]a\n[[:blank:]]b\n[[:cntrl:]]c\n[[:graph:]]d\n[[:lower:]]e\n[[:print:]]f\n[[:xdigit:]]g", "1a\n_a\n\tb\n b\n\x01c\n\x7fc\n~d\n d\nqe\nQe\n f\n\x7ff\nFg\nGg"},
	{"\\*\n\\!x\n\\#y\na\\?b\n\\\\", "*\nx\n!x\n#y\na?b\naxb\n\\"},
	{"/anchored\nfree\nd/nested\n/x/", "anchored\nq/anchored\nfree\nq/free\nd/nested\nq/d/nested\nx/\nq/x/"},
	{"dir/\nfile/\n!dir/keep/", "dir/a\ndir/keep/b\nq/dir/\nfile\nq/file/"},
	{"# comment\n\n  \nsp \nesc\\ \ntwo\\  \nbs\\\\ \n#", "# comment\nsp\nsp \nesc \nesc\ntwo \nbs\\\nbs\\ "},
	{"Case.TXT\n*.Log", "Case.TXT\ncase.txt\nCASE.TXT\na.Log\na.log"},
	{"a//\n//b\nc/\\\n*\\", "a/x\nc/d\nb\nq/a/\n*\\"},
	{"\ufeffbom\ncr\r\nnul\x00x", "bom\n\ufeffbom\ncr\ncr\r\nnul\nnulx"},
	{"a*/b\n*/c\na*\n*b*/", "a/b\naxx/b\nx/y/b\nq/c\nc\nab/c\nxby/z"},
}

type gitCase struct {
	lines []string
	paths []string        // every path and every parent of one, sorted
	isDir map[string]bool // the paths that are directories
}

// Limits that keep one input to one quick git call.
const (
	maxLines    = 8
	maxLineLen  = 64
	maxPaths    = 40
	maxPathLen  = 80
	maxPathDeep = 6
)

// newGitCase shapes fuzz input into lines and a tree of paths; ok is false
// for input too large or a path that is not a worktree path git would take.
func newGitCase(patterns, paths string) (gitCase, bool) {
	c := gitCase{lines: strings.Split(patterns, "\n"), isDir: map[string]bool{}}
	if len(c.lines) > maxLines {
		return c, false
	}
	for _, l := range c.lines {
		if len(l) > maxLineLen {
			return c, false
		}
	}
	seen := map[string]bool{}
	for _, raw := range strings.Split(paths, "\n") {
		dir := strings.HasSuffix(raw, "/")
		var parts []string
		for _, p := range strings.Split(raw, "/") {
			if p == "" {
				continue
			}
			if p == "." || p == ".." || strings.EqualFold(p, ".git") || p == ".gitignore" || strings.ContainsRune(p, 0) {
				return c, false
			}
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			continue
		}
		if len(parts) > maxPathDeep || len(raw) > maxPathLen {
			return c, false
		}
		for i := range parts {
			p := strings.Join(parts[:i+1], "/")
			if !seen[p] {
				seen[p] = true
				c.paths = append(c.paths, p)
			}
			if i < len(parts)-1 || dir {
				c.isDir[p] = true
			}
		}
	}
	if len(c.paths) == 0 || len(c.paths) > maxPaths {
		return c, false
	}
	slices.Sort(c.paths)
	return c, true
}

// withSlash marks a directory path for newGitCase.
func withSlash(p string, isDir bool) string {
	if isDir {
		return p + "/"
	}
	return p
}

// positive is line without its negation, as a line of its own.
func positive(line string) string {
	body, ok := strings.CutPrefix(line, "!")
	if !ok {
		return line
	}
	if strings.HasPrefix(body, "#") || strings.HasPrefix(body, "!") {
		return `\` + body
	}
	return body
}

func (c gitCase) check(t *testing.T, root string) {
	var stdin bytes.Buffer
	c.write(t, root, "", &stdin)
	defer c.remove(root, "")
	c.verify(t, checkIgnore(t, root, stdin.Bytes()), "")
}

// tops are the folders of one case below dir ("" or "name/"): all, l0, l1...
func (c gitCase) tops(dir string) []string {
	tops := []string{dir + "all"}
	for i := range c.lines {
		tops = append(tops, dir+"l"+strconv.Itoa(i))
	}
	return tops
}

// write lays the case out in root below dir and adds its paths to stdin.
func (c gitCase) write(t testing.TB, root, dir string, stdin *bytes.Buffer) {
	for k, top := range c.tops(dir) {
		if err := os.MkdirAll(filepath.Join(root, top), 0o755); err != nil {
			t.Fatalf("%v", err)
		}
		for _, p := range c.paths {
			if c.isDir[p] {
				if err := os.MkdirAll(filepath.Join(root, top, p), 0o755); err != nil {
					t.Fatalf("%v", err)
				}
			}
			stdin.WriteString(top + "/" + p + "\x00")
		}
		data := strings.Join(c.lines, "\n")
		if k > 0 {
			// After a blank line, so that a byte order mark is not at the start.
			data = "\n" + positive(c.lines[k-1]) + "\n"
		}
		if err := os.WriteFile(filepath.Join(root, top, ".gitignore"), []byte(data), 0o644); err != nil {
			t.Fatalf("%v", err)
		}
	}
}

func (c gitCase) remove(root, dir string) {
	for _, top := range c.tops(dir) {
		os.RemoveAll(filepath.Join(root, top))
	}
}

// verify compares our answers with git's for the case below dir.
func (c gitCase) verify(t testing.TB, got map[string]gitAnswer, dir string) {
	t.Helper()
	list := Parse(strings.Join(c.lines, "\n"), dir+"all/.gitignore", dir+"all/")
	all := NewMatcher(c.lines)
	for _, p := range c.paths {
		isDir := c.isDir[p]
		want := got[dir+"all/"+p]
		if r := decideAsGit(list, dir+"all/"+p, isDir); lineNo(r) != want.line {
			t.Fatalf("as a .gitignore %q, path %q (dir %v): ours line %q, git line %q (%s)", c.lines, p, isDir, lineNo(r), want.line, want.pattern)
		}
		wantAll, decided := false, false
		for i := len(c.lines) - 1; i >= 0; i-- {
			ignored := got[dir+"l"+strconv.Itoa(i)+"/"+p].line != ""
			if m := NewMatcher([]string{positive(c.lines[i])}).Match(p, isDir); m != ignored {
				t.Fatalf("allow [%q], path %q (dir %v): ours %v, git check-ignore %v", positive(c.lines[i]), p, isDir, m, ignored)
			}
			if ignored && !decided {
				wantAll, decided = !strings.HasPrefix(c.lines[i], "!"), true
			}
		}
		if m := all.Match(p, isDir); m != wantAll {
			t.Fatalf("allow %q, path %q (dir %v): ours %v, want %v", c.lines, p, isDir, m, wantAll)
		}
	}
}

// decideAsGit is git's answer for one ignore file: the first parent
// directory a positive rule matches, else the rule that matches path.
func decideAsGit(l List, path string, isDir bool) *Rule {
	for i := strings.IndexByte(path, '/'); i >= 0; i = nextSlash(path, i) {
		if r := l.Decide(path[:i], true); r != nil && !r.Negate {
			return r
		}
	}
	return l.Decide(path, isDir)
}

func nextSlash(s string, i int) int {
	j := strings.IndexByte(s[i+1:], '/')
	if j < 0 {
		return -1
	}
	return i + 1 + j
}

func lineNo(r *Rule) string {
	if r == nil {
		return ""
	}
	return strconv.Itoa(r.LineNo)
}

type gitAnswer struct{ line, pattern string }

// checkIgnore runs git check-ignore on the NUL-terminated paths in stdin and
// returns, per path, the line that decided (and its pattern), "" for none.
func checkIgnore(t testing.TB, root string, stdin []byte) map[string]gitAnswer {
	cmd := exec.Command("git", "check-ignore", "--no-index", "-z", "-v", "-n", "--stdin")
	cmd.Dir = root
	cmd.Env = gittest.Env()
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
		err = nil // nothing ignored
	}
	if err != nil {
		t.Fatalf("git check-ignore: %v: %s", err, stderr.Bytes())
	}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(fields)%4 != 0 {
		t.Fatalf("git check-ignore: %d fields, not a multiple of 4: %q", len(fields), out)
	}
	got := map[string]gitAnswer{}
	for i := 0; i < len(fields); i += 4 {
		got[fields[i+3]] = gitAnswer{line: fields[i+1], pattern: fields[i+2]}
	}
	if n := bytes.Count(stdin, []byte{0}); len(got) != n {
		t.Fatalf("git check-ignore answered %d paths of %d", len(got), n)
	}
	return got
}
