package doclinks

import (
	"flag"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The draw of sentences to check against the code: `go test ./internal/doclinks -run
// TestDrawSentences -v -args -seed=N -n=10 -rev=COMMIT` prints n sentences of docs/**/*.md
// as of COMMIT (the worktree when empty), drawn by a seeded random, each with file:line; a
// larger -n gives the same first draws followed by their replacements. -skip leaves pages
// out: by default docs/performance.md, whose sentences are records of past measurements,
// each with its date and commit, not claims about the code that a test can back.
var (
	drawSeed = flag.Uint64("seed", 25, "seed of the sentence draw")
	drawN    = flag.Int("n", 10, "sentences to draw")
	drawRev  = flag.String("rev", "", "commit whose docs to draw from (default: the worktree)")
	drawSkip = flag.String("skip", "docs/performance.md", "comma-separated pages left out of the draw")
)

// sentence is one factual sentence of a page: a paragraph's or list item's sentence, or a
// table's body row.
type sentence struct {
	file string
	line int
	text string
}

// TestDrawSentences prints the draw, and checks what makes it one: the same seed draws the
// same sentences, and none is a heading, a table's header row or a line of code.
func TestDrawSentences(t *testing.T) {
	root := repoRoot(t)
	var all []sentence
	for _, f := range docsFiles(t, root, *drawRev) {
		if slices.Contains(strings.Split(*drawSkip, ","), f) {
			continue
		}
		all = append(all, sentences(f, readAt(t, root, *drawRev, f))...)
	}
	if len(all) < 100 {
		t.Fatalf("found %d sentences in docs/: expected the docs tree", len(all))
	}
	got := draw(all, *drawSeed, *drawN)
	if again := draw(all, *drawSeed, *drawN); !slices.Equal(got, again) {
		t.Errorf("the same seed drew %v, then %v", got, again)
	}
	for i, s := range got {
		if strings.HasPrefix(s.text, "#") || strings.HasPrefix(s.text, "```") || strings.HasPrefix(s.text, "|---") {
			t.Errorf("drew a heading, fence or table rule: %s:%d: %s", s.file, s.line, s.text)
		}
		t.Logf("%d. %s:%d: %s", i+1, s.file, s.line, s.text)
	}
}

// TestSentencesSkipsStructure: headings, code and tables' header rows are not drawn; a
// paragraph splits at a sentence's end, not at "e.g.".
func TestSentencesSkipsStructure(t *testing.T) {
	page := "# Title\n\nFirst sentence here is long enough. Second one, e.g. with an\nabbreviation, ends here.\n\n" +
		"```\ncode line that is long enough to count\n```\n\n| col | other |\n|---|---|\n| a body row of the table | with two cells |\n\n- A list item that is also long.\n"
	got := sentences("docs/x.md", page)
	want := []sentence{
		{"docs/x.md", 3, "First sentence here is long enough."},
		{"docs/x.md", 3, "Second one, e.g. with an abbreviation, ends here."},
		{"docs/x.md", 12, "| a body row of the table | with two cells |"},
		{"docs/x.md", 14, "A list item that is also long."},
	}
	if !slices.Equal(got, want) {
		t.Errorf("sentences:\n got %+v\nwant %+v", got, want)
	}
}

// draw shuffles the sentences with a PCG seeded by seed and takes the first n.
func draw(all []sentence, seed uint64, n int) []sentence {
	r := rand.New(rand.NewPCG(seed, 0))
	idx := r.Perm(len(all))
	var out []sentence
	for _, i := range idx[:min(n, len(idx))] {
		out = append(out, all[i])
	}
	return out
}

// sentences splits a page into its candidate sentences, in order.
func sentences(file, page string) []sentence {
	var out []sentence
	var block []string
	start, fence := 0, false
	lines := strings.Split(page, "\n")
	flush := func() {
		out = append(out, split(file, start, strings.Join(block, " "))...)
		block = nil
	}
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			fence = !fence
		case fence:
		case strings.HasPrefix(trimmed, "|"):
			flush()
			if !strings.HasPrefix(trimmed, "|-") && !headerRow(lines, i) {
				out = append(out, sentence{file, i + 1, trimmed})
			}
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			flush()
		default:
			if isItem(trimmed) {
				flush()
				trimmed = strings.TrimSpace(strings.TrimLeft(trimmed, "-*0123456789."))
			}
			if len(block) == 0 {
				start = i + 1
			}
			block = append(block, trimmed)
		}
	}
	flush()
	return out
}

// headerRow reports whether line i is a table's header row: the line after it is the rule.
func headerRow(lines []string, i int) bool {
	return i+1 < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|-")
}

// isItem reports whether a line starts a list item ("- ", "* ", "1. ").
func isItem(s string) bool {
	if strings.HasPrefix(s, "- ") || strings.HasPrefix(s, "* ") {
		return true
	}
	digits := strings.TrimLeft(s, "0123456789")
	return len(digits) < len(s) && strings.HasPrefix(digits, ". ")
}

// split cuts a paragraph at each ". " (or "! ", "? ", ": " is not one) followed by a
// capital or a backquote; sentences of fewer than five words are not facts to check.
func split(file string, line int, text string) []sentence {
	var out []sentence
	rs := []rune(text)
	begin := 0
	for i := 0; i < len(rs); i++ {
		end := i == len(rs)-1
		if !end && strings.ContainsRune(".!?", rs[i]) && i+2 < len(rs) && rs[i+1] == ' ' &&
			(unicode.IsUpper(rs[i+2]) || rs[i+2] == '`') && !abbreviation(rs[begin:i+1]) {
			end = true
		}
		if !end {
			continue
		}
		s := strings.TrimSpace(string(rs[begin : i+1]))
		if len(strings.Fields(s)) >= 5 {
			out = append(out, sentence{file, line, s})
		}
		begin = i + 1
	}
	return out
}

// abbreviation reports whether s ends in one that a capital may follow ("e.g.", "i.e.").
func abbreviation(s []rune) bool {
	t := strings.ToLower(string(s))
	return strings.HasSuffix(t, "e.g.") || strings.HasSuffix(t, "i.e.") || strings.HasSuffix(t, "vs.")
}

// docsFiles lists docs/**/*.md at rev (the worktree's tracked and untracked files when "").
func docsFiles(t *testing.T, root, rev string) []string {
	t.Helper()
	args := []string{"-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "docs"}
	if rev != "" {
		args = []string{"-C", root, "ls-tree", "-r", "--name-only", rev, "docs"}
	}
	out, err := exec.Command("git", args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range strings.Fields(string(out)) {
		if path.Ext(f) == ".md" {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files
}

// readAt reads file at rev, or from the worktree when rev is "".
func readAt(t *testing.T, root, rev, file string) string {
	t.Helper()
	if rev == "" {
		b, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	out, err := exec.Command("git", "-C", root, "show", rev+":"+file).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
