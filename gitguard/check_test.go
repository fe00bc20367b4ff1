package gitguard_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

var allow = []string{"agent/agent.py", "PROGRAM.md", "notes/"}

// newProject is a small project with a benchmark the agent must not touch.
func newProject(t *testing.T) *gittest.Repo {
	t.Helper()
	// Made once per test binary and copied (TestMain removes it).
	return gittest.Template(t, "project", func(r *gittest.Repo) {
		r.WriteFiles(map[string]string{
			"agent/agent.py":     "print('agent')\n",
			"agent/helper.py":    "x = 1\n",
			"PROGRAM.md":         "# program\n",
			"benchmark.py":       "score = 1\n",
			"tasks/t1/check.sh":  "exit 0\n",
			".gitignore":         "workspace/\n*.log\n",
			"data/.gitignore":    "*.bin\n!keep.bin\n",
			"data/input.txt":     "1 2 3\n",
			"notes/idea.md":      "idea\n",
			"workspace/junk.txt": "ignored\n",
		})
		r.Commit("init")
	})
}

func check(t *testing.T, r *gittest.Repo, opts gitguard.Options) []gitguard.Violation {
	t.Helper()
	g, err := gitguard.Open(r.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if opts.Allow == nil {
		opts.Allow = allow
	}
	vs, err := g.Check(opts)
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

// summary renders violations as "path:kind" lines.
func summary(vs []gitguard.Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "%s:%s\n", v.Path, v.Kind)
	}
	return b.String()
}

// gitStatus is what a guard built on git's bookkeeping sees.
func gitStatus(t *testing.T, r *gittest.Repo) string {
	t.Helper()
	return r.Git("status", "--porcelain", "--untracked-files=all")
}

func TestCheckClean(t *testing.T) {
	r := newProject(t)
	r.Write("agent/agent.py", "print('better')\n")
	r.Write("notes/new.md", "new\n")
	r.Write("workspace/state.json", "{}\n")
	r.Write("run.log", "log\n")
	r.Write("data/x.bin", "bin\n")
	if vs := check(t, r, gitguard.Options{}); len(vs) != 0 {
		t.Fatalf("want no violations, got\n%s", summary(vs))
	}
}

// Each trick hides a forbidden change from git status (checked) and must
// still be caught by Check.
func TestCheckTricks(t *testing.T) {
	tests := []struct {
		name     string
		trick    func(r *gittest.Repo)
		opts     func(r *gittest.Repo) gitguard.Options
		gitSees  bool   // git status shows something (trick that is not about hiding)
		want     string // summary
		detail   string // substring of the first violation's detail
		wantHint string // substring of the first violation's hint
	}{
		{
			name: "assume-unchanged",
			trick: func(r *gittest.Repo) {
				r.Write("benchmark.py", "score = 100\n")
				r.Git("update-index", "--assume-unchanged", "benchmark.py")
			},
			want:     "benchmark.py:modified\n",
			detail:   "assume-unchanged",
			wantHint: "git checkout HEAD -- benchmark.py",
		},
		{
			name: "skip-worktree",
			trick: func(r *gittest.Repo) {
				r.Write("benchmark.py", "score = 100\n")
				r.Git("update-index", "--skip-worktree", "benchmark.py")
			},
			want:   "benchmark.py:modified\n",
			detail: "skip-worktree",
		},
		{
			name: "info/exclude",
			trick: func(r *gittest.Repo) {
				r.Write("tasks/t1/override.py", "cheat\n")
				r.Write(".git/info/exclude", "override.py\n")
			},
			want:     "tasks/t1/override.py:untracked\n",
			detail:   ".git/info/exclude:1",
			wantHint: "rm tasks/t1/override.py",
		},
		{
			name: "core.excludesFile",
			trick: func(r *gittest.Repo) {
				r.Write("conftest.py", "cheat\n")
				out := filepath.Join(t.TempDir(), "ignore")
				os.WriteFile(out, []byte("conftest.py\n"), 0o644)
				r.Git("config", "core.excludesFile", out)
			},
			want:   "conftest.py:untracked\n",
			detail: "core.excludesFile",
		},
		{
			name: "new .gitignore",
			trick: func(r *gittest.Repo) {
				r.Write("tasks/t1/.gitignore", "*\n")
				r.Write("tasks/t1/fake.sh", "exit 0\n")
			},
			want:   "tasks/t1/.gitignore:untracked\ntasks/t1/fake.sh:untracked\n",
			detail: "tasks/t1/.gitignore:1",
		},
		{
			name: "edited .gitignore with negation",
			trick: func(r *gittest.Repo) {
				r.Write("data/.gitignore", "*.bin\n!keep.bin\n*.txt\n")
				r.Git("update-index", "--assume-unchanged", "data/.gitignore")
				r.Write("data/extra.txt", "more data\n")
			},
			want: "data/.gitignore:modified\ndata/extra.txt:untracked\n",
		},
		{
			name: "forbidden commit",
			trick: func(r *gittest.Repo) {
				r.Write("benchmark.py", "score = 100\n")
				r.Commit("tweak")
			},
			opts:     gatedAtInit,
			want:     "benchmark.py:modified\n",
			detail:   "committed since refs/hgate/gated",
			wantHint: "git checkout refs/hgate/gated -- benchmark.py && git commit",
		},
		{
			name: "several commits",
			trick: func(r *gittest.Repo) {
				r.Write("benchmark.py", "score = 100\n")
				r.Commit("one")
				r.Write("agent/agent.py", "print(2)\n")
				r.Commit("two")
				r.Write("tasks/t2/check.sh", "exit 0\n")
				r.Commit("three")
			},
			opts: gatedAtInit,
			want: "benchmark.py:modified\ntasks/t2/check.sh:added\n",
		},
		{
			name: "amend",
			trick: func(r *gittest.Repo) {
				r.Write("benchmark.py", "score = 100\n")
				r.Git("add", "-A")
				r.Git("commit", "-q", "--amend", "-m", "init")
			},
			opts: gatedAtInit,
			want: ":history\nbenchmark.py:modified\n",
		},
		{
			name: "reset --soft",
			trick: func(r *gittest.Repo) {
				r.Write("benchmark.py", "score = 100\n")
				r.Commit("cheat")
				r.Git("reset", "-q", "--soft", "HEAD~1")
				r.Git("reset", "-q")
				r.Git("update-index", "--assume-unchanged", "benchmark.py")
			},
			want: "benchmark.py:modified\n",
		},
		{
			name: "history rewrite",
			trick: func(r *gittest.Repo) {
				r.Git("checkout", "-q", "--orphan", "fresh")
				r.Write("benchmark.py", "score = 100\n")
				r.Git("add", "-A")
				r.Git("commit", "-q", "-m", "rewritten")
			},
			opts: gatedAtInit,
			want: ":history\nbenchmark.py:modified\n",
		},
		{
			name: "symlink in place of allowed file",
			trick: func(r *gittest.Repo) {
				r.Symlink("../benchmark.py", "agent/agent.py")
				r.Git("update-index", "--assume-unchanged", "agent/agent.py")
			},
			want:   "agent/agent.py:type\n",
			detail: "regular file became a symlink",
		},
		{
			name: "symlink pointing outside",
			trick: func(r *gittest.Repo) {
				r.Symlink("/etc/passwd", "notes/passwd")
				r.Write(".git/info/exclude", "passwd\n")
			},
			want:   "notes/passwd:untracked\n",
			detail: "points outside the repository",
		},
		{
			name: "mode change with core.fileMode=false",
			trick: func(r *gittest.Repo) {
				r.Git("config", "core.fileMode", "false")
				r.Chmod("benchmark.py", 0o755)
			},
			want:     "benchmark.py:mode\n",
			wantHint: "chmod -x benchmark.py",
		},
		{
			name: "racy same-size same-mtime edit",
			trick: func(r *gittest.Repo) {
				// The agent tells git to trust size and mtime only, then
				// edits without changing either.
				r.Git("config", "core.trustctime", "false")
				r.Git("config", "core.checkStat", "minimal")
				p := r.Path("benchmark.py")
				old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
				os.Chtimes(p, old, old)
				r.Git("update-index", "--refresh")
				r.Write("benchmark.py", "score = 9\n")
				os.Chtimes(p, old, old)
			},
			want: "benchmark.py:modified\n",
		},
		{
			name: "nested repository",
			trick: func(r *gittest.Repo) {
				r.Write("notes/sub/x.py", "cheat\n")
				r.Git("-C", "notes/sub", "init", "-q")
			},
			gitSees: true,
			want:    "notes/sub:untracked\n",
			detail:  "nested repository",
		},
		{
			name: "GIT_DIR pointing at a decoy",
			trick: func(r *gittest.Repo) {
				r.Write("benchmark.py", "score = 100\n")
				decoy := filepath.Join(t.TempDir(), "decoy")
				r.Git("clone", "-q", "--bare", r.Dir, decoy)
				t.Setenv("GIT_DIR", decoy)
				t.Setenv("GIT_WORK_TREE", t.TempDir())
			},
			gitSees: true,
			want:    "benchmark.py:modified\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newProject(t)
			var opts gitguard.Options
			if tc.opts != nil {
				opts = tc.opts(r)
			}
			tc.trick(r)
			if !tc.gitSees {
				if st := gitStatus(t, r); st != "" && !strings.Contains(tc.name, "several") && !strings.Contains(tc.name, "commit") && !strings.Contains(tc.name, "amend") && !strings.Contains(tc.name, "rewrite") {
					t.Fatalf("trick does not fool git status:\n%s", st)
				}
			}
			vs := check(t, r, opts)
			if got := summary(vs); got != tc.want {
				t.Fatalf("violations:\n%swant:\n%s(all: %+v)", got, tc.want, vs)
			}
			if tc.detail != "" && !strings.Contains(vs[0].Detail, tc.detail) && !strings.Contains(vs[len(vs)-1].Detail, tc.detail) {
				t.Errorf("detail %q lacks %q", vs[0].Detail, tc.detail)
			}
			if tc.wantHint != "" && !strings.Contains(vs[0].Hint, tc.wantHint) {
				t.Errorf("hint %q lacks %q", vs[0].Hint, tc.wantHint)
			}
		})
	}
}

func gatedAtInit(r *gittest.Repo) gitguard.Options {
	r.Git("update-ref", gitguard.GatedRef, "HEAD")
	return gitguard.Options{}
}
