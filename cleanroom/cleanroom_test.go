package cleanroom

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/sandbox"
)

func TestScrubEnv(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin:relative/bin:/repo/tools:/repo:/bin::",
		"HOME=/home/me", "TMPDIR=/tmp/old", "GIT_DIR=/decoy", "PYTHONPATH=/evil",
		"LANG=C.UTF-8", "API_KEY=secret", "GIT_ALLOWED=no",
	}
	got := scrubEnv(environ, []string{"API_KEY", "GIT_ALLOWED"}, "/repo", "/room/home", "/room/tmp")
	want := []string{"HOME=/room/home", "TMPDIR=/room/tmp", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "API_KEY=secret"}
	if !slices.Equal(got, want) {
		t.Fatalf("scrubEnv =\n%q\nwant\n%q", got, want)
	}
}

// TestRoomHoldsOnlyTheCandidate checks what a task sees in the clean room: the candidate
// tree, the carried paths read-only, and nothing else the worktree holds.
func TestRoomHoldsOnlyTheCandidate(t *testing.T) {
	repo := gittest.New(t)
	repo.WriteFiles(map[string]string{
		".gitignore":    "/data/\n/scratch.txt\n",
		"agent.sh":      "v1\n",
		"lib/helper.sh": "helper\n",
	})
	repo.Commit("init")
	repo.WriteFiles(map[string]string{
		"agent.sh":       "v2\n",        // allowed change: in the room
		"lib/helper.sh":  "tampered\n",  // forbidden change: not in the room
		"scratch.txt":    "ignored\n",   // ignored: not in the room
		"data/input.csv": "carried\n",   // ignored but carried: in the room, read-only
		"untracked.txt":  "untracked\n", // untracked: not in the room
	})
	r, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Allow: []string{"agent.sh"}, CleanRoom: config.CleanRoom{Enabled: true, Carry: []string{"data"}}}
	e := &Rooms{Config: cfg, Repo: r, Enabled: true}
	tree, err := r.CandidateTree(gitguard.Options{Allow: cfg.Allow})
	if err != nil {
		t.Fatal(err)
	}
	rm, err := e.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	filepath.WalkDir(rm.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(rm.Dir, p)
			data, _ := os.ReadFile(p)
			files = append(files, rel+"="+strings.TrimSpace(string(data)))
		}
		return nil
	})
	want := []string{".gitignore=/data/\n/scratch.txt", "agent.sh=v2", "data/input.csv=carried", "lib/helper.sh=helper"}
	if !slices.Equal(files, want) {
		t.Fatalf("room holds\n%q\nwant\n%q", files, want)
	}
	if err := os.WriteFile(filepath.Join(rm.Dir, "data", "input.csv"), []byte("x"), 0o644); err == nil && os.Geteuid() != 0 {
		t.Fatal("a carried file is writable")
	}
	if fi, _ := os.Stat(filepath.Join(rm.Dir, "data")); fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("carried folder mode %v, want read-only", fi.Mode().Perm())
	}
	rm.Close()
	if _, err := os.Stat(rm.base); !os.IsNotExist(err) {
		t.Fatalf("room not removed: %v", err)
	}
}

// BenchmarkCleanRoom10k materializes a 10,000-file tree into a fresh clean room (target
// under 1 s) and reports the ratio to `git checkout-index -a` writing the same files.
func BenchmarkCleanRoom10k(b *testing.B) {
	repo := gittest.New(b)
	for i := range 10000 {
		repo.Write(fmt.Sprintf("src/d%02d/f%04d.txt", i%100, i), fmt.Sprintf("file %d\n%s", i, strings.Repeat("x", i%2000)))
	}
	repo.Commit("10k files")
	r, err := gitguard.Open(repo.Dir)
	if err != nil {
		b.Fatal(err)
	}
	_, tree, err := r.Head()
	if err != nil {
		b.Fatal(err)
	}
	e := &Rooms{Config: &config.Config{}, Repo: r, Enabled: true}
	var ours, git time.Duration
	for b.Loop() {
		start := time.Now()
		rm, err := e.Open(plumbing.Hash(tree))
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		rm.Close()

		dir := b.TempDir()
		start = time.Now()
		cmd := exec.Command("git", "checkout-index", "-a", "--prefix="+dir+"/")
		cmd.Dir, cmd.Env = repo.Dir, gittest.Env()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		git += time.Since(start)
	}
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "ms/materialize")
	b.ReportMetric(float64(ours)/float64(git), "ratio-vs-git-checkout-index")
}

// roomEnv is a Rooms on a one-commit repository, its rooms in a TMPDIR of the test's own.
func roomEnv(t *testing.T) (*Rooms, plumbing.Hash) {
	t.Helper()
	t.Setenv("TMPDIR", t.TempDir())
	repo := gittest.New(t)
	repo.WriteFiles(map[string]string{"bench/lib.sh": "echo lib\n", "agent.sh": "v1\n"})
	repo.Commit("init")
	r, err := gitguard.Open(repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	_, tree, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	return &Rooms{Config: &config.Config{Allow: []string{"agent.sh"}}, Repo: r, Enabled: true}, plumbing.Hash(tree)
}

// TestRoomPaths: a room's path cannot be guessed from the repository (attack class 3):
// two rooms, of one run or of two, get unrelated random names, and every folder on the
// way is private (0700). What a killed run left behind is still swept by the next one.
func TestRoomPaths(t *testing.T) {
	e, tree := roomEnv(t)
	open := func(e *Rooms) *Room {
		rm, err := e.Open(tree)
		if err != nil {
			t.Fatal(err)
		}
		return rm
	}
	a, b := open(e), open(e)
	other := &Rooms{Config: e.Config, Repo: e.Repo, Enabled: true, swept: true}
	c := open(other)
	bases := []string{a.base, b.base, c.base}
	for i, p := range bases {
		for _, dir := range []string{p, filepath.Dir(p)} {
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o700 {
				t.Errorf("%s has mode %v, want 0700", dir, fi.Mode().Perm())
			}
		}
		for j, q := range bases[:i] {
			if filepath.Base(p) == filepath.Base(q) {
				t.Errorf("rooms %d and %d share the name %s", i, j, filepath.Base(p))
			}
		}
	}
	if filepath.Dir(a.base) == filepath.Dir(c.base) {
		t.Errorf("two runs share the parent %s", filepath.Dir(a.base))
	}
	// The old scheme named the parent after a hash of the root; nothing does now.
	old := ownerMarker(e.Repo.Root())[len("owner-"):][:12]
	for _, p := range bases {
		if strings.Contains(p, old) {
			t.Errorf("%s is derived from the repository root", p)
		}
	}
	// A new run sweeps the leftovers of both runs once their maker is gone (here: the
	// folders renamed to a reaped process's name), never a running one's, and leaves
	// other folders alone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	gone := proc.Owner{PID: dead.ProcessState.Pid(), StartTicks: proc.Self().StartTicks}
	live := filepath.Dir(a.base)
	var left []string
	for _, p := range []string{c.base} {
		parent := filepath.Dir(p)
		moved := filepath.Join(filepath.Dir(parent), "hgate-"+gone.Tag()+"-1")
		if err := os.Rename(parent, moved); err != nil {
			t.Fatal(err)
		}
		left = append(left, filepath.Join(moved, filepath.Base(p)))
	}
	keep := filepath.Join(os.TempDir(), "hgate-not-ours")
	os.Mkdir(keep, 0o700)
	next := &Rooms{Config: e.Config, Repo: e.Repo, Enabled: true}
	d := open(next)
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) && runtime.GOOS == "linux" {
			t.Errorf("%s was not swept: %v", p, err)
		}
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a running hgate's folder was swept: %v", err)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("sweep removed a folder of another repository: %v", err)
	}
	// Closing the last room removes the run's folder too.
	d.Close()
	if _, err := os.Stat(filepath.Dir(d.base)); !os.IsNotExist(err) {
		t.Errorf("the run's folder outlived its last room: %v", err)
	}
}

// TestRoomUnwritableFromSandbox: a process sandboxed as the loop's agent will be (it may
// write the worktree) cannot write into a room, wherever the room is.
func TestRoomUnwritableFromSandbox(t *testing.T) {
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	e, tree := roomEnv(t)
	rm, err := e.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	lib := filepath.Join(rm.Dir, "bench", "lib.sh")
	cmd := exec.Command("sh", "-c", `for f in "$TMPDIR"/hgate-*/room-*/repo/bench/lib.sh; do echo evil >> "$f"; done`)
	if err := sandbox.Wrap(cmd, sandbox.Policy{Write: []string{e.Repo.Root()}}); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("append from the sandbox: %v %s", err, out)
	}
	if data, _ := os.ReadFile(lib); string(data) != "echo lib\n" {
		t.Errorf("the room's lib.sh is now %q", data)
	}
}

// TestNoSandbox: where Landlock is missing, tasks run unsandboxed after one warning per
// command, and each run request gets a tree of its own since tasks can write it.
func TestNoSandbox(t *testing.T) {
	saved := sandboxAvailable
	defer func() { sandboxAvailable = saved }()
	sandboxAvailable = func() (int, error) { return 0, errors.New("not supported on plan9") }
	e, tree := roomEnv(t)
	var log strings.Builder
	e.Log = &log
	var dirs []string
	for range 2 {
		rm, err := e.Open(tree)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			run, err := rm.Runner(nil, Train)
			if err != nil {
				t.Fatal(err)
			}
			if run.Sandbox != nil {
				t.Error("a runner is sandboxed without Landlock")
			}
			dirs = append(dirs, run.Dir)
		}
		rm.Close()
	}
	want := "hgate: warning: no Landlock in this kernel: benchmark tasks run unsandboxed (not supported on plan9)\n"
	if log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
	if dirs[0] == dirs[1] || dirs[2] == dirs[3] {
		t.Errorf("two run requests share a writable tree: %q", dirs)
	}
}

// TestLanes: in the sandbox the read-only tree is shared by every run request, each with
// its own HOME; folders clean_room.writable names make each request's tree its own.
func TestLanes(t *testing.T) {
	if _, err := sandbox.Available(); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	e, tree := roomEnv(t)
	for _, writable := range [][]string{nil, {"out"}} {
		e.Config.CleanRoom.Writable = writable
		rm, err := e.Open(tree)
		if err != nil {
			t.Fatal(err)
		}
		a, err := rm.Runner(nil, Train)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rm.Runner(nil, Train)
		if err != nil {
			t.Fatal(err)
		}
		if (a.Dir == b.Dir) != (writable == nil) {
			t.Errorf("writable %q: trees %s and %s", writable, a.Dir, b.Dir)
		}
		if a.Sandbox == nil || b.Sandbox == nil || a.Sandbox.Write[0] == b.Sandbox.Write[0] {
			t.Fatalf("writable %q: policies %+v and %+v", writable, a.Sandbox, b.Sandbox)
		}
		if writable != nil {
			if got := a.Sandbox.Write[1]; got != filepath.Join(a.Dir, "out") {
				t.Errorf("writable folder %s", got)
			}
		}
		rm.Close()
	}
}

// TestTempReleased: prepare's baseline folder without a clean room leaves nothing behind.
func TestTempReleased(t *testing.T) {
	e, tree := roomEnv(t)
	e.Enabled = false
	rm, err := e.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	traces, err := e.TempDir("baseline-")
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(traces)
	rm.Close()
	if left, _ := filepath.Glob(filepath.Join(os.TempDir(), "hgate-*")); len(left) > 0 {
		t.Errorf("left behind: %q", left)
	}
}

// TestCachesPersist: a clean_room.caches variable points every task at the same folder
// under the git common directory, in every run: what run 1 writes there run 2 reads.
// In the sandbox that folder is writable while the room's tree, the other caches'
// parent and the repository stay read-only.
func TestCachesPersist(t *testing.T) {
	e, tree := roomEnv(t)
	e.Config.CleanRoom.Caches = map[string]string{"MY_CACHE": "mine"}
	e.Config.Benchmark = config.Benchmark{Concurrency: 1, TaskTimeout: time.Minute}
	want := filepath.Join(e.Repo.CommonDir(), "hgate", "caches", "mine")
	sandboxed := e.Sandboxed()
	run := func(script string) (benchmark.Result, string) {
		t.Helper()
		// A new Rooms and room per run, as two hgate commands would have.
		env := &Rooms{Config: e.Config, Repo: e.Repo, Enabled: true}
		env.Config.Benchmark.Run = []string{"sh", "-c", script}
		rm, err := env.Open(tree)
		if err != nil {
			t.Fatal(err)
		}
		defer rm.Close()
		r, err := rm.Runner(nil, Train)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Env[len(r.Env)-1]; got != "MY_CACHE="+want {
			t.Errorf("last variable %q, want MY_CACHE=%s", got, want)
		}
		if sandboxed && !slices.Contains(r.Sandbox.Write, want) {
			t.Errorf("policy %+v does not make %s writable", r.Sandbox, want)
		}
		traces := t.TempDir()
		out, err := r.Run(t.Context(), benchmark.Request{Split: "train", Tasks: []string{"t1"}, TraceDir: traces})
		if err != nil {
			t.Fatal(err)
		}
		log, _ := os.ReadFile(filepath.Join(traces, "t1.log"))
		return out.Results["t1"], string(log)
	}
	res, log := run(`echo warm > "$MY_CACHE/f" && echo 1`)
	if !res.Passed() {
		t.Fatalf("run 1 could not write its cache: %+v\n%s", res, log)
	}
	res, log = run(`cat "$MY_CACHE/f"`)
	if !res.Passed() || !strings.Contains(log, "warm") {
		t.Fatalf("run 2 did not find run 1's file: %+v\n%s", res, log)
	}
	if !sandboxed {
		t.Skip("no sandbox here: the rest of the room is writable")
	}
	for _, target := range []string{"bench/lib.sh", "$MY_CACHE/../planted", e.Repo.Root() + "/agent.sh"} {
		res, log = run(`echo evil >> "` + target + `" || exit 0; exit 1`)
		if !res.Passed() {
			t.Errorf("a task wrote %s: %+v\n%s", target, res, log)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(want), "planted")); err == nil {
		t.Error("a task created a folder beside its cache")
	}
}

// TestCacheSymlinkRefused: a symlink planted where a cache goes would let tasks write
// wherever it points (the worktree); the run request is refused instead.
func TestCacheSymlinkRefused(t *testing.T) {
	e, tree := roomEnv(t)
	e.Config.CleanRoom.Caches = map[string]string{"MY_CACHE": "mine"}
	caches := filepath.Join(e.Repo.CommonDir(), "hgate", "caches")
	if err := os.MkdirAll(caches, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.Repo.Root(), filepath.Join(caches, "mine")); err != nil {
		t.Fatal(err)
	}
	rm, err := e.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer rm.Close()
	_, err = rm.Runner(nil, Train)
	if err == nil || !strings.Contains(err.Error(), "is not a folder (a symlink?)") {
		t.Errorf("runner over a planted symlink: %v", err)
	}
}

// TestNoNamespaces: where Landlock works but namespaces cannot be had, tasks still run
// under the read allowlist, with the system's /proc, after one warning per command; with
// them, tasks are isolated and clean_room.network: false takes their network away.
func TestNoNamespaces(t *testing.T) {
	if _, err := sandbox.Available(); err != nil {
		t.Skip(err)
	}
	saved := sandboxNamespaces
	defer func() { sandboxNamespaces = saved }()
	for _, ns := range []bool{false, true} {
		sandboxNamespaces = func() error { return nil }
		if !ns {
			sandboxNamespaces = func() error { return errors.New("namespaces: operation not permitted") }
		}
		e, tree := roomEnv(t)
		e.Config.CleanRoom.Network = false
		var log strings.Builder
		e.Log = &log
		rm, err := e.Open(tree)
		if err != nil {
			t.Fatal(err)
		}
		run, err := rm.Runner(nil, Train)
		if err != nil {
			t.Fatal(err)
		}
		p := run.Sandbox
		if p == nil || p.Isolate != ns || p.NoNetwork != ns || slices.Contains(p.Read, "/proc") == ns || !slices.Contains(p.Read, run.Dir) {
			t.Errorf("namespaces %v: policy %+v", ns, p)
		}
		want := ""
		if !ns {
			want = "hgate: warning: no namespaces here: benchmark tasks run in the Landlock sandbox, but share /proc, IPC and the network with the user's other processes (namespaces: operation not permitted)\n"
		}
		if log.String() != want {
			t.Errorf("namespaces %v: log %q, want %q", ns, log.String(), want)
		}
		rm.Close()
	}
}
