package gitguard_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

var loopAllow = []string{"agent/*.py", "PROGRAM.md"}

var loopAuthor = gitguard.Signature{Name: "hgate", Email: "hgate@hgate.invalid", When: time.Unix(1700000000, 0).UTC()}

func loopProject(t *testing.T) *gittest.Repo {
	t.Helper()
	// Made once per test binary and copied (TestMain removes it).
	return gittest.Template(t, "loop project", func(r *gittest.Repo) {
		r.WriteFiles(map[string]string{
			"agent/agent.py":     "print('agent')\n",
			"PROGRAM.md":         "# program\n",
			"benchmark.py":       "score = 1\n",
			"tasks/t1/check.sh":  "exit 0\n",
			".gitignore":         "workspace/\n*.log\n",
			"workspace/keep.txt": "state\n",
		})
		r.Chmod("tasks/t1/check.sh", 0o755)
		r.Commit("init")
	})
}

// The agent's leftovers each case starts from, as a shell script.
var leftovers = []struct {
	name  string
	sh    string
	saved map[string]string // path → content expected in the attempt ("" = absent)
}{
	{"nothing", "true", map[string]string{"agent/agent.py": "print('agent')\n"}},
	{"allowed and forbidden edits", "echo better > agent/agent.py; echo 'score = 9' > benchmark.py",
		map[string]string{"agent/agent.py": "better\n", "benchmark.py": "score = 9\n"}},
	{"untracked files, ignored ones not saved", "mkdir -p new/deep; echo x > new/deep/f.txt; echo y > agent/extra.py; echo log > run.log; echo w > workspace/scratch",
		map[string]string{"new/deep/f.txt": "x\n", "agent/extra.py": "y\n", "run.log": "", "workspace/scratch": ""}},
	{"deleted files", "rm benchmark.py; rm -r tasks",
		map[string]string{"benchmark.py": "", "tasks/t1/check.sh": ""}},
	{"index half staged", "echo staged > agent/agent.py; git add agent/agent.py; echo later > agent/agent.py; echo s > staged.txt; git add staged.txt; git rm -q --cached benchmark.py",
		map[string]string{"agent/agent.py": "later\n", "staged.txt": "s\n", "benchmark.py": "score = 1\n"}},
	{"edited .gitignore to hide a file", "printf 'workspace/\\n*.log\\nhidden.txt\\n' > .gitignore; echo h > hidden.txt",
		map[string]string{"hidden.txt": "h\n", ".gitignore": "workspace/\n*.log\nhidden.txt\n"}},
	{"symlinked directory", "rm -r tasks; mkdir -p ../elsewhere-$$; ln -s ../elsewhere-$$ tasks",
		map[string]string{"tasks/t1/check.sh": ""}},
	{"workspace deleted", "rm -r workspace", map[string]string{"workspace/keep.txt": ""}},
}

func TestSaveAttemptAndRestoreHead(t *testing.T) {
	for _, tc := range leftovers {
		t.Run(tc.name, func(t *testing.T) {
			r := loopProject(t)
			head := r.Head()
			if out, err := r.Sh(tc.sh); err != nil {
				t.Fatalf("%s: %v\n%s", tc.sh, err, out)
			}
			wsBefore, _ := os.ReadFile(r.Path("workspace/keep.txt"))
			g := open(t, r)
			opts := gitguard.Options{Allow: loopAllow}
			ref := "refs/hgate/attempts/run1/1"
			c, err := g.SaveAttempt(opts, ref, "attempt 1\n", loopAuthor)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(r.Git("rev-parse", ref)); got != c.String() {
				t.Errorf("ref %s = %s, want %s", ref, got, c)
			}
			if got := strings.TrimSpace(r.Git("rev-parse", ref+"^")); got != head {
				t.Errorf("attempt parent %s, want HEAD %s", got, head)
			}
			for p, want := range tc.saved {
				got, err := r.TryGit("show", ref+":"+p)
				if want == "" && err == nil {
					t.Errorf("attempt holds %s (%q), want it absent", p, got)
				}
				if want != "" && got != want {
					t.Errorf("attempt %s = %q (%v), want %q", p, got, err, want)
				}
			}
			if _, err := g.SaveAttempt(opts, ref, "again\n", loopAuthor); err == nil {
				t.Errorf("a second SaveAttempt under the same ref succeeded")
			}

			if err := g.RestoreHead(opts); err != nil {
				t.Fatal(err)
			}
			checkRestored(t, r, head, tc.sh, wsBefore)
		})
	}
}

// TestSaveAttemptAndRestore checks the one-walk form against the same
// leftovers: the attempt commit is the one SaveAttempt makes, and the
// worktree ends as RestoreHead leaves it.
func TestSaveAttemptAndRestore(t *testing.T) {
	for _, tc := range leftovers {
		t.Run(tc.name, func(t *testing.T) {
			r := loopProject(t)
			head := r.Head()
			if out, err := r.Sh(tc.sh); err != nil {
				t.Fatalf("%s: %v\n%s", tc.sh, err, out)
			}
			wsBefore, _ := os.ReadFile(r.Path("workspace/keep.txt"))
			g := open(t, r)
			opts := gitguard.Options{Allow: loopAllow}
			want, err := g.SaveAttempt(opts, "refs/hgate/attempts/run1/1", "attempt\n", loopAuthor)
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.SaveAttemptAndRestore(opts, "refs/hgate/attempts/run1/2", "attempt\n", loopAuthor)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("attempt %s, want %s as SaveAttempt made it", got, want)
			}
			checkRestored(t, r, head, tc.sh, wsBefore)
			if _, err := g.SaveAttemptAndRestore(opts, "refs/hgate/attempts/run1/2", "again\n", loopAuthor); err == nil {
				t.Errorf("a second save under the same ref succeeded")
			}
		})
	}
}

// checkRestored fails unless the worktree and index equal head and the
// ignored files are as they were.
func checkRestored(t *testing.T, r *gittest.Repo, head, sh string, wsBefore []byte) {
	t.Helper()
	if st := r.Git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status after the restore:\n%s", st)
	}
	if r.Head() != head {
		t.Errorf("HEAD moved")
	}
	if d := r.Git("diff", "--stat", "HEAD"); d != "" {
		t.Errorf("diff against HEAD:\n%s", d)
	}
	if _, err := os.Lstat(r.Path("tasks")); err == nil {
		if fi, _ := os.Lstat(r.Path("tasks")); fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("tasks is still a symlink")
		}
	}
	if fi, err := os.Stat(r.Path("tasks/t1/check.sh")); err != nil || fi.Mode()&0o100 == 0 {
		t.Errorf("check.sh not restored executable: %v", err)
	}
	// Ignored paths are never touched.
	ws, _ := os.ReadFile(r.Path("workspace/keep.txt"))
	if string(ws) != string(wsBefore) {
		t.Errorf("workspace/keep.txt changed: %q → %q", wsBefore, ws)
	}
	if strings.Contains(sh, "run.log") {
		if _, err := os.Stat(r.Path("run.log")); err != nil {
			t.Errorf("ignored run.log removed")
		}
	}
	if out, err := r.Fsck("--no-progress"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestCommitCandidate(t *testing.T) {
	tests := []struct {
		name      string
		sh        string
		committed string // git show --name-status HEAD
		dirty     string // git status --porcelain afterwards
	}{
		{"allowed edit", "echo better > agent/agent.py", "M\tagent/agent.py\n", ""},
		{"allowed add and delete", "echo n > agent/new.py; rm PROGRAM.md", "D\tPROGRAM.md\nA\tagent/new.py\n", ""},
		{"forbidden edits stay uncommitted", "echo better > agent/agent.py; echo 'score = 9' > benchmark.py; echo u > untracked.txt",
			"M\tagent/agent.py\n", " M benchmark.py\n?? untracked.txt\n"},
		{"staged allowed content differs from disk", "echo staged > agent/agent.py; git add agent/agent.py; echo disk > agent/agent.py",
			"M\tagent/agent.py\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := loopProject(t)
			head := r.Head()
			racyIndex(t, r)
			if out, err := r.Sh(tc.sh); err != nil {
				t.Fatalf("%s: %v\n%s", tc.sh, err, out)
			}
			pinTimes(t, r)
			g := open(t, r)
			c, err := g.CommitCandidate(gitguard.Options{Allow: loopAllow}, "iteration 1: better\n", loopAuthor)
			if err != nil {
				t.Fatal(err)
			}
			if r.Head() != c.String() {
				t.Fatalf("HEAD %s, want %s", r.Head(), c)
			}
			if got := strings.TrimSpace(r.Git("rev-parse", "HEAD^")); got != head {
				t.Errorf("parent %s, want %s", got, head)
			}
			if got := r.Git("symbolic-ref", "HEAD"); got != "refs/heads/main\n" {
				t.Errorf("HEAD is %q, want the branch", got)
			}
			if got := r.Git("show", "--format=", "--name-status", "HEAD"); got != tc.committed {
				t.Errorf("committed:\n%s\nwant:\n%s", got, tc.committed)
			}
			if got := r.Git("log", "-1", "--format=%s|%an"); got != "iteration 1: better|hgate\n" {
				t.Errorf("log: %q", got)
			}
			if got := r.Git("status", "--porcelain", "--untracked-files=all"); got != tc.dirty {
				t.Errorf("status:\n%s\nwant:\n%s", got, tc.dirty)
			}
			if out, err := r.Fsck("--no-progress"); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

// past is a time well before any index a test writes.
var past = time.Now().Add(-time.Hour).Truncate(time.Second)

// racyIndex makes every index entry racily clean, deterministically: file
// and index mtimes set to the same past second, and ctime not trusted (as
// core.trustctime=false does), so that an edit of equal size that keeps the
// mtime is visible to git only through its racy-git check.
func racyIndex(t *testing.T, r *gittest.Repo) {
	t.Helper()
	r.Git("config", "core.trustctime", "false")
	pinTimes(t, r)
	r.Git("update-index", "--refresh")
	if err := os.Chtimes(r.Path(".git/index"), past, past); err != nil {
		t.Fatal(err)
	}
}

// pinTimes sets the mtime of every tracked file on disk to past.
func pinTimes(t *testing.T, r *gittest.Repo) {
	t.Helper()
	for _, p := range strings.Fields(r.Git("ls-files")) {
		if err := os.Chtimes(r.Path(p), past, past); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// A kept commit leaves no index entry whose stat data vouches for a forbidden
// edit: git status must keep showing it, and git checkout must
// refuse to overwrite it.
func TestCommitCandidateKeepsForbiddenEditVisible(t *testing.T) {
	r := loopProject(t)
	racyIndex(t, r)
	r.Write("agent/agent.py", "better\n")
	r.Write("benchmark.py", "score = 9\n") // same size as "score = 1\n"
	pinTimes(t, r)
	if _, err := open(t, r).CommitCandidate(gitguard.Options{Allow: loopAllow}, "kept\n", loopAuthor); err != nil {
		t.Fatal(err)
	}
	if got := r.Git("status", "--porcelain"); got != " M benchmark.py\n" {
		t.Errorf("status after commit: %q, want benchmark.py modified", got)
	}
	if got := r.Git("diff", "--name-only", "HEAD"); got != "benchmark.py\n" {
		t.Errorf("diff HEAD: %q", got)
	}
}

// The index written by a restore never vouches for content other than what
// the restore wrote, even when a process left behind edits a file again
// right after it was written back.
func TestRestoreHeadKeepsLaterEditVisible(t *testing.T) {
	r := loopProject(t)
	racyIndex(t, r)
	r.Write("benchmark.py", "score = 9\n")
	gitguard.SetRestoreWritten(func(p string) {
		if p == "benchmark.py" {
			os.WriteFile(r.Path(p), []byte("score = 7\n"), 0o644)
			os.Chtimes(r.Path(p), past, past)
		}
	})
	defer gitguard.SetRestoreWritten(nil)
	if err := open(t, r).RestoreHead(gitguard.Options{Allow: loopAllow}); err != nil {
		t.Fatal(err)
	}
	if got := r.Git("status", "--porcelain"); got != " M benchmark.py\n" {
		t.Errorf("status after restore: %q, want benchmark.py modified", got)
	}
}

func TestCommitCandidateLostRace(t *testing.T) {
	r := loopProject(t)
	r.Write("agent/agent.py", "better\n")
	g := open(t, r)
	// Another commit lands between reading HEAD and moving the branch.
	head, _, _ := g.Head()
	r.Git("commit", "-q", "--allow-empty", "-m", "race")
	if err := g.MoveBranch(head, head); err == nil {
		t.Fatalf("moving a branch that moved succeeded")
	}
}
