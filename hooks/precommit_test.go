package hooks_test

import (
	"flag"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/hooks"
	"github.com/hgate/hgate/internal/gittest"
)

// baseRepo is a committed repository with a few files in nested folders, an
// executable and a symlink.
func baseRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	// Made once per test binary and copied (TestMain removes it).
	return gittest.Template(t, "base", func(r *gittest.Repo) {
		r.WriteFiles(map[string]string{
			"agent.sh":       "echo worse\n",
			"check.sh":       "exit 1\n",
			"lib/a.txt":      "a\n",
			"lib/deep/b.txt": "b\n",
			"tool.sh":        "echo tool\n",
		})
		r.Chmod("tool.sh", 0o755)
		r.Symlink("lib/a.txt", "link")
		r.Commit("init")
	})
}

func summarize(vs []gitguard.Violation) []string {
	out := []string{}
	for _, v := range vs {
		out = append(out, v.Kind+" "+v.Path)
	}
	return out
}

func TestPreCommit(t *testing.T) {
	tests := []struct {
		name       string
		setup      string
		allow      []string
		indexFile  string
		want       []string
		wantDetail string // a substring of some violation's detail
	}{
		{name: "nothing staged", allow: []string{"agent.sh"}},
		{name: "unstaged forbidden edit is not committed", setup: "echo x >> check.sh; echo n > new.txt", allow: []string{"agent.sh"}},
		{name: "staged allowed edit", setup: "echo x >> agent.sh; git add agent.sh", allow: []string{"agent.sh"}},
		{name: "staged forbidden edit", setup: "echo x >> check.sh; git add check.sh", allow: []string{"agent.sh"},
			want: []string{"modified check.sh"}, wantDetail: "staged"},
		{name: "added", setup: "echo n > new.txt; git add new.txt", allow: []string{"agent.sh"},
			want: []string{"added new.txt"}},
		{name: "deleted", setup: "git rm -q lib/a.txt", allow: []string{"agent.sh", "link"},
			want: []string{"deleted lib/a.txt"}},
		{name: "renamed", setup: "git mv lib/deep/b.txt lib/c.txt", allow: []string{"agent.sh"},
			want: []string{"renamed lib/deep/b.txt", "added lib/c.txt"}, wantDetail: "renamed to lib/c.txt"},
		{name: "mode", setup: "chmod +x check.sh; git add check.sh", allow: []string{"agent.sh"},
			want: []string{"mode check.sh"}, wantDetail: "mode 0100644 → 0100755"},
		{name: "file became symlink", setup: "rm check.sh; ln -s agent.sh check.sh; git add check.sh", allow: []string{"agent.sh"},
			want: []string{"type check.sh"}},
		{name: "allowed file became symlink is refused", setup: "rm agent.sh; ln -s check.sh agent.sh; git add agent.sh", allow: []string{"agent.sh"},
			want: []string{"type agent.sh"}, wantDetail: "regular file became a symlink"},
		{name: "new symlink out of the repository on an allowed path", setup: "mkdir out; ln -s ../../etc/passwd out/x; git add out/x", allow: []string{"out/"},
			want: []string{"added out/x"}, wantDetail: "symlink to ../../etc/passwd points outside the repository"},
		{name: "symlink retargeted inside is fine when allowed", setup: "rm link; ln -s lib/deep/b.txt link; git add link", allow: []string{"link"}},
		{name: "gitlink on an allowed path is refused", setup: "git update-index --add --cacheinfo 160000,1111111111111111111111111111111111111111,vendor/sub", allow: []string{"vendor/"},
			want: []string{"added vendor/sub"}, wantDetail: "submodule"},
		{name: "intent-to-add is not committed", setup: "echo n > new.txt; git add -N new.txt", allow: []string{"agent.sh"}},
		{name: "file became a folder", setup: "git rm -q check.sh; mkdir check.sh; echo x > check.sh/x; git add check.sh/x", allow: []string{"agent.sh"},
			want: []string{"deleted check.sh", "added check.sh/x"}},
		{name: "folder pattern", setup: "echo x >> lib/deep/b.txt; echo n > lib/deep/new/c.txt 2>/dev/null || (mkdir lib/deep/new && echo n > lib/deep/new/c.txt); git add lib", allow: []string{"lib/"}},
		{name: "negated subfolder", setup: "echo x >> lib/deep/b.txt; echo x >> lib/a.txt; git add lib", allow: []string{"lib/", "!lib/deep/"},
			want: []string{"modified lib/deep/b.txt"}},
		{name: "deep add outside allow", setup: "mkdir -p lib/deep/new && echo n > lib/deep/new/c.txt; git add lib", allow: []string{"lib/a.txt"},
			want: []string{"added lib/deep/new/c.txt"}},
		{name: "temporary index, relative to the root", setup: "echo x >> check.sh; cp .git/index .git/tmp-index; GIT_INDEX_FILE=.git/tmp-index git add check.sh",
			allow: []string{"agent.sh"}, indexFile: ".git/tmp-index", want: []string{"modified check.sh"}},
		{name: "the repository's index when a temporary one is elsewhere", setup: "echo x >> check.sh; cp .git/index .git/tmp-index; GIT_INDEX_FILE=.git/tmp-index git add check.sh",
			allow: []string{"agent.sh"}},
		{name: "assume-unchanged does not hide a staged change", setup: "echo x >> check.sh; git add check.sh; git update-index --assume-unchanged check.sh", allow: []string{"agent.sh"},
			want: []string{"modified check.sh"}},
		{name: "index version 4", setup: "echo x >> check.sh; git add check.sh; git update-index --index-version 4", allow: []string{"agent.sh"},
			want: []string{"modified check.sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := baseRepo(t)
			if tt.setup != "" {
				if out, err := r.Sh(tt.setup); err != nil {
					t.Fatalf("setup: %v\n%s", err, out)
				}
			}
			repo, err := gitguard.Open(r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := hooks.PreCommit(repo, tt.allow, tt.indexFile)
			if err != nil {
				t.Fatal(err)
			}
			got := summarize(vs)
			want := append([]string{}, tt.want...)
			sort.Strings(got)
			sort.Strings(want)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("violations:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if tt.wantDetail != "" {
				found := false
				for _, v := range vs {
					found = found || strings.Contains(v.Detail, tt.wantDetail)
				}
				if !found {
					t.Errorf("no detail holds %q: %+v", tt.wantDetail, vs)
				}
			}
			for _, v := range vs {
				if v.Hint == "" {
					t.Errorf("%s: no hint", v.Path)
				}
			}
		})
	}
}

// TestPreCommitUnborn checks the first commit: everything staged is added, and the
// hint unstages without needing HEAD.
func TestPreCommitUnborn(t *testing.T) {
	r := gittest.New(t)
	r.WriteFiles(map[string]string{"agent.sh": "a\n", "check.sh": "c\n"})
	r.Git("add", "-A")
	repo, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := hooks.PreCommit(repo, []string{"agent.sh"}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || vs[0].Path != "check.sh" || vs[0].Kind != "added" || vs[0].Hint != "git rm --cached -q -- check.sh" {
		t.Fatalf("violations = %+v", vs)
	}
}

// TestPreCommitCannotAnswer checks that an index the hook cannot read is an error, never
// "nothing staged".
func TestPreCommitCannotAnswer(t *testing.T) {
	tests := []struct {
		name      string
		setup     string
		indexFile string
		wantErr   string
	}{
		{"missing index file", "", ".git/no-such-index", "no such file"},
		{"corrupt index", "printf 'DIRC\\000\\000\\000\\002garbage' > .git/index", "", "read index"},
		{"truncated index", "head -c 100 .git/index > .git/short && mv .git/short .git/index", "", "read index"},
		{"unmerged entries", "h=$(git hash-object -w check.sh); printf '100644 %s 1\\tcheck.sh\\n100644 %s 2\\tcheck.sh\\n' $h $h | git update-index --index-info", "",
			"check.sh is unmerged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := baseRepo(t)
			if tt.setup != "" {
				if out, err := r.Sh(tt.setup); err != nil {
					t.Fatalf("setup: %v\n%s", err, out)
				}
			}
			repo, err := gitguard.Open(r.Dir)
			if err != nil {
				t.Fatal(err)
			}
			vs, err := hooks.PreCommit(repo, nil, tt.indexFile)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("PreCommit = %+v, %v; want an error holding %q", vs, err, tt.wantErr)
			}
		})
	}
}

var (
	preCommitCases = flag.Int("precommit.cases", 60, "TestPreCommitAgainstGit: how many generated cases (15 with -short)")
	preCommitSeed  = flag.Int64("precommit.seed", 7, "TestPreCommitAgainstGit: the seed of the generated cases")
)

// TestPreCommitAgainstGit is a seeded differential test: after random staged edits, the
// paths PreCommit reports with an empty allowlist are exactly those of
// git diff --cached --name-only --no-renames. The same cases every run; -args
// -precommit.seed=N -precommit.cases=M searches others.
func TestPreCommitAgainstGit(t *testing.T) {
	r := gittest.New(t)
	var files []string
	for i := 0; i < 40; i++ {
		p := fmt.Sprintf("d%d/s%d/f%d.txt", i%3, i%5, i)
		files = append(files, p)
		r.Write(p, fmt.Sprintf("file %d\n", i))
	}
	r.Write("top.txt", "top\n")
	files = append(files, "top.txt")
	r.Commit("init")
	repo, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(*preCommitSeed))
	cases := *preCommitCases
	if testing.Short() {
		cases = min(cases, 15)
	}
	for c := 0; c < cases; c++ {
		r.Git("reset", "-q", "--hard", "HEAD")
		r.Git("clean", "-q", "-f", "-d")
		var script []string
		for k := rng.Intn(6) + 1; k > 0; k-- {
			p := files[rng.Intn(len(files))]
			switch rng.Intn(8) {
			case 0:
				script = append(script, fmt.Sprintf("echo %d >> %s && git add %s", c, p, p))
			case 1:
				script = append(script, fmt.Sprintf("git rm -q --cached --ignore-unmatch %s", p))
			case 2:
				script = append(script, fmt.Sprintf("rm -f %s; git add -A %s", p, filepath.Dir(p)))
			case 3:
				script = append(script, fmt.Sprintf("chmod +x %s 2>/dev/null; git add %s 2>/dev/null || true", p, p))
			case 4:
				n := fmt.Sprintf("%s/new%d-%d.txt", filepath.Dir(p), c, k)
				script = append(script, fmt.Sprintf("mkdir -p %s && echo new > %s && git add %s", filepath.Dir(n), n, n))
			case 5:
				script = append(script, fmt.Sprintf("rm -f %s && ln -s ../x %s && git add %s", p, p, p))
			case 6:
				script = append(script, fmt.Sprintf("echo unstaged >> %s 2>/dev/null || true", p))
			case 7:
				script = append(script, fmt.Sprintf("git mv -k %s %s.moved", p, p))
			}
		}
		s := strings.Join(script, "\n")
		if out, err := r.Sh(s); err != nil {
			t.Fatalf("case %d: %v\n%s\n%s", c, err, s, out)
		}
		vs, err := hooks.PreCommit(repo, nil, "")
		if err != nil {
			t.Fatalf("case %d: %v", c, err)
		}
		got := map[string]bool{}
		for _, v := range vs {
			got[v.Path] = true
		}
		gotList := keys(got)
		wantList := strings.Fields(r.Git("diff", "--cached", "--name-only", "--no-renames"))
		sort.Strings(wantList)
		if strings.Join(gotList, " ") != strings.Join(wantList, " ") {
			t.Fatalf("case %d after\n%s\nhgate: %v\ngit:   %v", c, s, gotList, wantList)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
