package gitguard_test

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// FuzzIgnoreLayersVsGit checks how the guard layers ignore files — nested
// .gitignore files, info/exclude, core.excludesFile — against git
// check-ignore on a small repository built from the input:
//
//   - ignores: .gitignore lines, for the root's file until a line ">dir"
//     switches to dir/.gitignore (committed: they are the base, and the
//     working copies equal it, since the guard reads the base's on purpose);
//   - excludes: core.excludesFile lines, then after a line "---" the lines
//     of .git/info/exclude, then after a line "+++" hgate.yaml's ignore:
//     list (read by git as the lone .gitignore of a second repository);
//   - paths: untracked files, one a line (their parents are folders).
//
// Check with an empty allow reports every untracked file the guard does not
// ignore. For each file, by the rule git names (one git process):
//
//   - ignored by the ignore: list: the guard does not report it, whatever
//     the .gitignore files say (ignore: adds to them);
//   - not ignored by git: the guard reports it, with no "hidden from git";
//   - ignored by a .gitignore: the guard does not report it (it would
//     hide a file git shows if it did not report one git shows);
//   - ignored by info/exclude or core.excludesFile: these never hide a file
//     from the guard, so it reports it unless the .gitignore files alone
//     ignore it, which one git call cannot tell.
//
// Every file the guard reports and git ignores must name git's rule
// ("hidden from git by SOURCE:LINE").
func FuzzIgnoreLayersVsGit(f *testing.F) {
	if _, err := exec.LookPath("git"); err != nil {
		f.Skip("git is not installed: FuzzIgnoreLayersVsGit compares the guard's ignore layering with git check-ignore")
	}
	for _, s := range layerSeeds {
		f.Add(s[0], s[1], s[2])
	}
	shm := "/dev/shm"
	if _, err := os.Stat(shm); err != nil {
		shm = ""
	}
	f.Fuzz(func(t *testing.T, ignores, excludes, paths string) {
		c, ok := newLayerCase(ignores, excludes, paths)
		if !ok {
			return
		}
		root := shm
		if root == "" {
			root = t.TempDir()
		}
		dir, err := os.MkdirTemp(root, "hgate-layers-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		c.check(t, dir)
	})
}

// layerSeeds are {ignores, excludes, paths}: one per layering rule.
var layerSeeds = [][3]string{
	// A deeper .gitignore overrides a shallower one, both ways.
	{"*.log\n>a\n!*.log\n>a/b\n*.log", "", "x.log\na/x.log\na/b/x.log\na/c/x.log"},
	// A negation cannot re-include a file whose folder is excluded,
	// not even from a .gitignore inside that folder.
	{"a/\n!a/keep\n>a\n!keep", "", "a/keep\na/x\nb/a/keep"},
	// Anchored patterns are relative to their .gitignore's folder.
	{"/top\n>a\n/x\nb/y\n>a/b\n/z", "", "top\na/top\nx\na/x\na/c/x\na/b/y\nb/y\na/b/z\na/b/c/z\nz"},
	// Dir-only patterns match folders, not files of that name.
	{"d/\n>a\nf/", "", "d\nq/d/x\na/f\nb/f/x\na/c/f/x"},
	// info/exclude and core.excludesFile rank below every .gitignore;
	// info/exclude outranks core.excludesFile.
	{"!*.tmp\n>a\n*.o", "*.tmp\n*.bak\n!*.swp\n---\n!*.bak\n*.swp\n/a/", "x.tmp\nx.bak\nx.swp\na/y.o\na/z\nb/a/w"},
	// A pattern with a slash in a subfolder's .gitignore, and ** across levels.
	{"**/gen/**\n>a\nb/**/c\n!gen/keep", "", "gen/x\na/gen/keep\na/b/c\na/b/x/c\nb/c"},
	// A .gitignore that ignores itself still counts; * with negated folders.
	{"*\n!*/\n!*.go\n>a\n!.gitignore\n!*.md", "", "x.go\ny.txt\na/z.md\na/w\na/b/v.go"},
	// ignore: adds to the .gitignore files: a .gitignore negation does not
	// re-include what it ignores, and its own negations re-include only
	// what it ignored itself.
	{"*.o\n!keep.o\n>a\n!*.log", "\n+++\n*.log\nkeep.o\n!x.o\n/b/", "x.o\nkeep.o\na/x.log\nb/y\na/b/z\nc.log"},
}

type gitAnswer struct{ source, line, pattern string }

func (a gitAnswer) ignores() bool { return a.line != "" && !strings.HasPrefix(a.pattern, "!") }

// answers reads check-ignore -z -v -n output: the rule that decided, per file (named
// without the "./" it was given with).
func (c layerCase) answers(t *testing.T, out []byte) map[string]gitAnswer {
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(fields)%4 != 0 {
		t.Fatalf("git check-ignore: %d fields, not a multiple of 4: %q", len(fields), out)
	}
	got := map[string]gitAnswer{}
	for i := 0; i < len(fields); i += 4 {
		got[strings.TrimPrefix(fields[i+3], "./")] = gitAnswer{fields[i], fields[i+1], fields[i+2]}
	}
	if len(got) != len(c.files) {
		t.Fatalf("git check-ignore answered %d paths of %d", len(got), len(c.files))
	}
	return got
}

type layerCase struct {
	ignores  map[string][]string // "" or "dir/" → lines of its .gitignore
	excludes []string            // core.excludesFile
	info     []string            // .git/info/exclude
	extra    []string            // hgate.yaml's ignore: (nil: none)
	files    []string            // untracked files, sorted
}

// Limits that keep one input small and quick.
const (
	maxLayerLines = 24
	maxLayerLine  = 48
	maxLayerFiles = 24
	maxLayerDeep  = 4 // a file three folders down
)

// layerName reports whether a path element is one the case may use.
func layerName(p string) bool {
	return p != "" && p != "." && p != ".." && !strings.EqualFold(p, ".git") && p != ".gitignore" &&
		!strings.ContainsAny(p, "\x00\n") && len(p) <= 16
}

func splitDir(s string) ([]string, bool) {
	var parts []string
	for _, p := range strings.Split(s, "/") {
		if p == "" {
			continue
		}
		if !layerName(p) {
			return nil, false
		}
		parts = append(parts, p)
	}
	return parts, true
}

func newLayerCase(ignores, excludes, paths string) (layerCase, bool) {
	c := layerCase{ignores: map[string][]string{}}
	if strings.Count(ignores, "\n")+strings.Count(excludes, "\n") >= maxLayerLines {
		return c, false
	}
	dirs := map[string]bool{}
	cur := ""
	for _, l := range strings.Split(ignores, "\n") {
		if len(l) > maxLayerLine {
			return c, false
		}
		if d, ok := strings.CutPrefix(l, ">"); ok {
			parts, ok := splitDir(d)
			if !ok || len(parts) >= maxLayerDeep {
				return c, false
			}
			cur = ""
			for _, p := range parts {
				cur += p + "/"
				dirs[cur] = true
			}
			continue
		}
		c.ignores[cur] = append(c.ignores[cur], l)
	}
	excludes, extra, hasExtra := strings.Cut(excludes, "\n+++")
	if hasExtra {
		c.extra = strings.Split(strings.TrimPrefix(extra, "\n"), "\n")
	}
	ex, info, _ := strings.Cut(excludes, "\n---")
	info = strings.TrimPrefix(info, "\n")
	for _, l := range [...]string{ex, info} {
		if len(l) > maxLayerLines*maxLayerLine {
			return c, false
		}
	}
	c.excludes = strings.Split(ex, "\n")
	c.info = strings.Split(info, "\n")
	files := map[string]bool{}
	for _, raw := range strings.Split(paths, "\n") {
		parts, ok := splitDir(raw)
		if !ok || len(parts) > maxLayerDeep {
			return c, false
		}
		if len(parts) == 0 {
			continue
		}
		d := ""
		for _, p := range parts[:len(parts)-1] {
			d += p + "/"
			dirs[d] = true
		}
		files[strings.Join(parts, "/")] = true
	}
	for f := range files {
		if dirs[f+"/"] {
			return c, false // a file and a folder of the same name
		}
		c.files = append(c.files, f)
	}
	if len(c.files) == 0 || len(c.files) > maxLayerFiles {
		return c, false
	}
	slices.Sort(c.files)
	return c, true
}

// check builds the case in dir (dir/repo and dir/excludes), asks git and the
// guard, and compares.
func (c layerCase) check(t *testing.T, dir string) {
	repo := filepath.Join(dir, "repo")
	excludesFile := filepath.Join(dir, "excludes")
	write := func(p, data string) {
		full := filepath.Join(repo, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(excludesFile, []byte(strings.Join(c.excludes, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// info/exclude goes through a file too: its lines may hold a NUL, which no argv can.
	infoFile := filepath.Join(dir, "info-exclude")
	if err := os.WriteFile(infoFile, []byte(strings.Join(c.info, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	// Every path git reads as a pathspec starts with "./": one that starts with ":" is
	// pathspec magic to git ("*" then "!" ignores a file named ":", but git check-ignore
	// ":" answers for the top folder), and check-ignore takes no --literal-pathspecs.
	var gitignores []string
	for d, lines := range c.ignores {
		write(d+".gitignore", strings.Join(lines, "\n"))
		gitignores = append(gitignores, "./"+d+".gitignore")
	}
	slices.Sort(gitignores)
	var stdin bytes.Buffer
	for _, f := range c.files {
		write(f, "x")
		stdin.WriteString("./" + f + "\x00")
	}
	pathsFile, gitOut := filepath.Join(dir, "paths"), filepath.Join(dir, "git.out")
	if err := os.WriteFile(pathsFile, stdin.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// hgate.yaml's ignore: lines, as the lone .gitignore of a repository
	// of their own holding the same files.
	extraRepo := ""
	if c.extra != nil {
		extraRepo = filepath.Join(dir, "extra")
		for _, f := range c.files {
			write("../extra/"+f, "x")
		}
		write("../extra/.gitignore", strings.Join(c.extra, "\n"))
	}
	// One process: a repository whose first commit holds the .gitignore
	// files, then check-ignore on the untracked files (and in the ignore:
	// repository, if any); --no-index, or a file named "*" would read as a
	// glob matching a tracked file, which check-ignore answers as not
	// ignored.
	script := `set -e
git init -q
git config core.excludesFile "$1"
mkdir -p .git/info
cp "$2" .git/info/exclude
paths=$3 out=$4 extra=$5
shift 5
git add -f -- "$@"
git commit -q --allow-empty -m base
git check-ignore --no-index -z -v -n --stdin < "$paths" > "$out" || [ $? = 1 ]
[ -n "$extra" ] || exit 0
cd "$extra"
git init -q
git check-ignore --no-index -z -v -n --stdin < "$paths" || [ $? = 1 ]`
	args := append([]string{"-c", script, "sh", excludesFile, infoFile, pathsFile, gitOut, extraRepo}, gitignores...)
	cmd := exec.Command("sh", args...)
	cmd.Dir = repo
	cmd.Env = gittest.Env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	extraOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("git: %v: %s", err, stderr.Bytes())
	}
	out, err := os.ReadFile(gitOut)
	if err != nil {
		t.Fatal(err)
	}
	git := c.answers(t, out)
	extraGit := map[string]gitAnswer{}
	if c.extra != nil {
		extraGit = c.answers(t, extraOut)
	}

	g, err := gitguard.Open(repo)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := g.Check(gitguard.Options{Ignore: c.extra})
	if err != nil {
		t.Fatal(err)
	}
	reported := map[string]string{}
	for _, v := range vs {
		if v.Kind != "untracked" {
			t.Fatalf("guard: %s %s (%s), want only untracked files", v.Path, v.Kind, v.Detail)
		}
		reported[v.Path] = v.Detail
	}
	layout := fmt.Sprintf(".gitignore files %q, core.excludesFile %q, info/exclude %q, ignore: %q", c.ignores, c.excludes, c.info, c.extra)
	for _, f := range c.files {
		a := git[f]
		detail, rep := reported[f]
		delete(reported, f)
		gitIgnores := a.ignores()
		switch {
		case extraGit[f].ignores():
			// ignore: ignores on its own, whatever the .gitignore files say.
			if rep {
				t.Fatalf("%s: the guard reports %q, ignore: holds %s:%s %q", layout, f, extraGit[f].source, extraGit[f].line, extraGit[f].pattern)
			}
			continue
		case !gitIgnores:
			if !rep {
				t.Fatalf("%s: the guard hides %q, git shows it (%s:%s %q)", layout, f, a.source, a.line, a.pattern)
			}
			if strings.Contains(detail, "hidden from git") {
				t.Fatalf("%s: %q: the guard says %q, git shows it", layout, f, detail)
			}
			continue
		case a.source != ".git/info/exclude" && a.source != excludesFile:
			if rep {
				t.Fatalf("%s: the guard reports %q, git ignores it by %s:%s %q", layout, f, a.source, a.line, a.pattern)
			}
			continue
		}
		source := a.source
		if source == excludesFile {
			source = "core.excludesFile " + excludesFile
		}
		if want := fmt.Sprintf("hidden from git by %s:%s (", source, a.line); rep && !strings.Contains(detail, want) {
			t.Fatalf("%s: %q: the guard says %q, want %q…", layout, f, detail, want)
		}
	}
	for p, d := range reported {
		t.Fatalf("%s: the guard reports %q (%s), not one of the files", layout, p, d)
	}
}

var layersRandom = flag.Int("layers.random", 0, "TestIgnoreLayersRandom: how many generated cases to check against git (0: skip)")

var layersSeed = flag.Uint64("layers.seed", 1, "TestIgnoreLayersRandom: the seed of the generated cases")

// TestIgnoreLayersRandom is FuzzIgnoreLayersVsGit's check on cases drawn
// from a small alphabet of folders, patterns and file names, so that
// patterns meet the paths they may match: a faster search than byte
// mutation, run by hand (go test ./gitguard -run TestIgnoreLayersRandom
// -args -layers.random=3000).
func TestIgnoreLayersRandom(t *testing.T) {
	if *layersRandom == 0 {
		t.Skip("run with -args -layers.random=N")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dirs := []string{"a", "b", "a/b", "a/c", "b/a", "a/b/c"}
	pats := []string{"a", "/a", "a/", "/a/", "!a", "!/a", "!a/", "b", "/b", "b/", "!b", "!b/", "*", "!*", "*/",
		"!*/", "x", "!x", "/x", "*.o", "!*.o", "/*.o", "a/x", "/a/x", "b/x", "a/*", "!a/*", "**/x", "a/**", "!a/**",
		"**/b/", "*/x", "c", "c/", "!c", "a/b/", "!a/b/x", "x/", ".gitignore", "!.gitignore"}
	names := []string{"x", "a", "b", "c", "x.o", "y"}
	rng := rand.New(rand.NewPCG(*layersSeed, 0))
	pick := func(l []string) string { return l[rng.IntN(len(l))] }
	lines := func(n int) string {
		var b []string
		for range rng.IntN(n + 1) {
			b = append(b, pick(pats))
		}
		return strings.Join(b, "\n")
	}
	for done := 0; done < *layersRandom; {
		ignores := lines(3)
		for range rng.IntN(3) {
			ignores += "\n>" + pick(dirs) + "\n" + lines(3)
		}
		excludes := ""
		if rng.IntN(3) == 0 {
			excludes = lines(2) + "\n---\n" + lines(2)
		}
		if rng.IntN(3) == 0 {
			excludes += "\n+++\n" + lines(2)
		}
		var files []string
		for range 1 + rng.IntN(6) {
			f := pick(names)
			if rng.IntN(4) > 0 {
				f = pick(dirs) + "/" + f
			}
			files = append(files, f)
		}
		c, ok := newLayerCase(ignores, excludes, strings.Join(files, "\n"))
		if !ok {
			continue
		}
		done++
		c.check(t, t.TempDir())
	}
}
