package doclinks

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// link is a Markdown inline link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve: every relative link of every tracked Markdown file names a file that
// exists, and every #anchor names a heading of that file (GitHub's anchors).
func TestLinksResolve(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files under %s: expected the README and docs/", len(files), root)
	}
	anchors := map[string]map[string]bool{}
	for _, f := range files {
		for _, problem := range deadLinks(root, f, anchors) {
			t.Error(problem)
		}
	}
}

// TestReadmeIsShort: the README is an entry page a user reads in ten minutes; the rest
// belongs under docs/.
func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 300 {
		t.Errorf("README.md has %d lines, over 300: move the detail to a page under docs/", n)
	}
}

// TestNoIssueNumbers: the repository's text describes behaviour, not this project's
// tracker, which the repository does not hold.
func TestNoIssueNumbers(t *testing.T) {
	root := repoRoot(t)
	out, err := exec.Command("git", "-C", root, "grep", "--untracked", "-n", "-i", "-E", `issues? [0-9]+\b|\(issue [0-9]`, "--", ".", ":!*.sum").Output()
	if err != nil && len(out) == 0 {
		return // git grep exits 1 when nothing matches
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		t.Errorf("cites an issue number: %s", l)
	}
}

func deadLinks(root, file string, anchors map[string]map[string]bool) []string {
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for i, line := range strings.Split(string(b), "\n") {
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
			}
			where := fmt.Sprintf("%s:%d: %s", file, i+1, target)
			if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
				problems = append(problems, where+": no such file")
				continue
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if anchors[dest] == nil {
				anchors[dest] = headings(filepath.Join(root, dest))
			}
			if !anchors[dest][frag] {
				problems = append(problems, where+": no heading with that anchor in "+dest)
			}
		}
	}
	return problems
}

// headings are a file's anchors as GitHub makes them: the heading's text lower-cased,
// punctuation dropped but '-' and '_', spaces made '-', a repeat suffixed -1, -2, ...
func headings(path string) map[string]bool {
	set := map[string]bool{}
	f, err := os.Open(path)
	if err != nil {
		return set
	}
	defer f.Close()
	seen := map[string]int{}
	fence := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		text, ok := heading(line)
		if fence || !ok {
			continue
		}
		a := slug(text)
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		set[a] = true
	}
	return set
}

func heading(line string) (string, bool) {
	hashes := len(line) - len(strings.TrimLeft(line, "#"))
	if hashes == 0 || hashes > 6 || !strings.HasPrefix(line[hashes:], " ") {
		return "", false
	}
	return strings.TrimSpace(line[hashes:]), true
}

func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "*.md").Output()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if !strings.Contains(f, "/testdata/") {
			files = append(files, f)
		}
	}
	return files
}
