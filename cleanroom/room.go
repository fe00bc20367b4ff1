// Package cleanroom owns the rooms benchmark commands run in: a fresh, private temporary
// directory holding exactly the candidate tree (materialized from git objects) plus the
// ignored paths clean_room.carry names, copied read-only; the sandbox policy of the tasks
// run there; a scrubbed environment; and the clean_room.caches folders every run shares
// (a test-split run through a private layer). What only test-split runs may read
// (clean_room.test_only, loop.sandbox.hidden) is kept out of every other run (split.go).
// Untracked or ignored files, a stale cache, a gitignored module or a GIT_* variable
// cannot sway a score. Off, commands run in the repository itself.
package cleanroom

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/internal/sandbox"
)

// Rooms makes the rooms of one command (or of one loop, across its gates). It holds what
// the first room learns once: whether Landlock is there, and this process's temporary
// folder. The zero value's fields must be set before use; it is not safe for concurrent
// Open calls.
type Rooms struct {
	Config *config.Config
	Repo   *gitguard.Repo
	// Log receives warnings; nil discards them.
	Log io.Writer
	// Enabled runs every benchmark command in a clean room; off, in the repository.
	Enabled bool
	// Meter counts what every run of these rooms spent (a Harbor benchmark's agents).
	Meter benchmark.Meter

	swept          bool   // TempDir has cleared what a killed run left behind
	tmpParent      string // this process's random temporary folder (see TempDir)
	sandboxChecked bool   // Sandboxed has looked for Landlock (and warned)
	sandboxOK      bool
	nsOK           bool // tasks get namespaces of their own (sandbox.Namespaces)
	layersChecked  bool // checkLayers has looked for overlayfs (and warned)
	trackedWarned  bool // warnTracked has warned

	probing <-chan struct{} // the probes Probe started; closed when done
}

// Room is where benchmark commands run. Where Landlock is available, every task runs in
// the sandbox (internal/sandbox): the tree is read-only to it except the
// clean_room.writable folders; its HOME (one per run request), its TMPDIR (one per task)
// and the clean_room.caches folders (shared by every run) are the only other places it
// may write, and nothing it starts outlives it. Each run request (Step 1, Step 2, Step 3,
// a bench, a baseline) is a lane of its own: tasks of the test split never share a
// writable folder with train tasks. A lane reuses the room's tree only while no task can
// write it. The room's tree is the train split's: the paths only test runs may see
// (clean_room.test_only, loop.sandbox.hidden) are absent from it, and test lanes get a
// tree of their own that has them.
type Room struct {
	// Dir is the project root the commands see (the shared, read-only train tree).
	Dir     string
	base    string // the temporary folder to remove; "" when not a clean room
	tree    plumbing.Hash
	sandbox bool // tasks run under Landlock
	owner   *Rooms
	scoped  []string // paths of the tree absent from Dir (see scoped.room)

	mu      sync.Mutex
	testDir string          // the test split's tree, made on first use; Dir when nothing is scoped
	claimed map[string]bool // trees a lane whose tasks may write took
}

// Open prepares the place to run the candidate tree. The caller must Close it.
func (rs *Rooms) Open(tree plumbing.Hash) (*Room, error) {
	if !rs.Enabled {
		return &Room{Dir: rs.Repo.Root(), owner: rs}, nil
	}
	base, err := rs.TempDir("room-")
	if err != nil {
		return nil, fmt.Errorf("clean room: %w", err)
	}
	sc, err := rs.scope()
	if err != nil {
		benchmark.RemoveAll(base)
		return nil, err
	}
	probed := rs.probing
	if probed == nil {
		probed = rs.probeSandbox()
	}
	r := &Room{Dir: filepath.Join(base, "repo"), base: base, tree: tree, owner: rs, scoped: sc.room}
	err = rs.materialize(tree, r.Dir, r.trainOnly())
	<-probed
	r.sandbox = rs.Sandboxed()
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// probeSandbox starts the sandbox's probes (at a command's first room: the shim's
// protocol probe, then a shim started in namespaces of its own) while the room is being
// written, which needs neither: a command's first task then waits for the longer of the
// two, not for both. The channel closes when they are done; Sandboxed reads their
// cached answers after.
func (rs *Rooms) probeSandbox() <-chan struct{} {
	done := make(chan struct{})
	if rs.sandboxChecked {
		close(done)
		return done
	}
	available, namespaces := sandboxAvailable, sandboxNamespaces
	go func() {
		defer close(done)
		if _, err := available(); err == nil {
			_ = namespaces() // the answer is cached (sync.Once); Sandboxed reads it
		}
	}()
	return done
}

// Probe starts the sandbox's probes now, in the background, when rooms are enabled: a
// command that will open one calls it first thing, so that the probes run while it
// checks its state and reads the candidate tree (a few hundred milliseconds on a loaded
// machine), not after, and its first room seldom waits for them. Open waits for them.
func (rs *Rooms) Probe() {
	if rs.Enabled && rs.probing == nil {
		rs.probing = rs.probeSandbox()
	}
}

// trainOnly is what a train tree leaves out.
func (r *Room) trainOnly() []string { return r.scoped }

// materialize writes the tree and the carried paths into dir, less the paths in leave.
func (rs *Rooms) materialize(tree plumbing.Hash, dir string, leave []string) error {
	if err := rs.Repo.Materialize(tree, dir); err != nil {
		return fmt.Errorf("clean room: %w", err)
	}
	rs.warnTracked(dir)
	if len(rs.Config.CleanRoom.Carry) > 0 {
		root, err := fsafe.OpenRoot(rs.Repo.Root())
		if err != nil {
			return fmt.Errorf("clean room: %w", err)
		}
		defer root.Close()
		for _, p := range rs.Config.CleanRoom.Carry {
			if err := carry(root, path.Clean(p), filepath.Join(dir, filepath.FromSlash(p))); err != nil {
				return fmt.Errorf("clean room: carry %s: %w", p, err)
			}
		}
	}
	return removeScoped(dir, leave)
}

// sandboxAvailable is sandbox.Available; tests replace it to see the fallback.
var sandboxAvailable = sandbox.Available

// sandboxNamespaces is sandbox.Namespaces, replaced in tests.
var sandboxNamespaces = sandbox.Namespaces

// Sandboxed reports whether tasks can run under Landlock, warning once when not.
func (rs *Rooms) Sandboxed() bool {
	if !rs.sandboxChecked {
		rs.sandboxChecked = true
		_, err := sandboxAvailable()
		rs.sandboxOK = err == nil
		if err != nil {
			fmt.Fprintf(rs.log(), "hgate: warning: no Landlock in this kernel: benchmark tasks run unsandboxed (%v)\n", err)
		} else if err := sandboxNamespaces(); err != nil {
			fmt.Fprintf(rs.log(), "hgate: warning: no namespaces here: benchmark tasks run in the Landlock sandbox, but share /proc, IPC and the network with the user's other processes (%v)\n", err)
		} else {
			rs.nsOK = true
		}
	}
	return rs.sandboxOK
}

// sandboxLayers is sandbox.Layers, replaced in tests.
var sandboxLayers = sandbox.Layers

// checkLayers warns once when a test-split task's writes to the caches cannot go to a
// private layer: the caches are read-only to it then.
func (rs *Rooms) checkLayers() {
	if rs.layersChecked {
		return
	}
	rs.layersChecked = true
	err := errors.New("no mount namespace")
	if rs.nsOK {
		err = sandboxLayers()
	}
	if err != nil {
		fmt.Fprintf(rs.log(), "hgate: warning: clean_room.caches are read-only to test-split tasks here: their writes cannot go to a private layer (%v)\n", err)
	}
}

func (rs *Rooms) log() io.Writer {
	if rs.Log == nil {
		return io.Discard
	}
	return rs.Log
}

// InRepo builds a benchmark runner working in the repository root, outside any room.
// One pool is shared by every run of a workflow so concurrent steps never exceed the
// configured concurrency; nil makes one.
func (rs *Rooms) InRepo(pool *benchmark.Pool) *benchmark.Runner {
	if pool == nil {
		pool = benchmark.NewPool(rs.Config.Benchmark.Concurrency)
	}
	return &benchmark.Runner{Dir: rs.Repo.Root(), Config: rs.Config.Benchmark, Pool: pool, Meter: &rs.Meter}
}

// Close removes the clean room, making the read-only carried paths writable first, and
// this process's temporary folder once nothing else is in it.
func (r *Room) Close() {
	if r.base != "" {
		benchmark.RemoveAll(r.base)
	}
	// prepare's baseline traces may have opened this process's folder even
	// without a clean room.
	if r.owner != nil {
		r.owner.releaseTemp()
	}
}

// Runner builds a benchmark runner for one run request of split s in this room: a lane
// with its own HOME, a private TMPDIR per task, the clean_room.caches variables, and (in
// the sandbox) the policy of policy.
func (r *Room) Runner(pool *benchmark.Pool, s Split) (*benchmark.Runner, error) {
	rs := r.owner
	run := rs.InRepo(pool)
	if r.base == "" {
		return run, nil
	}
	lane, err := os.MkdirTemp(r.base, "lane-")
	if err != nil {
		return nil, fmt.Errorf("clean room: %w", err)
	}
	cr := rs.Config.CleanRoom
	dir, err := r.laneTree(s, lane)
	if err != nil {
		return nil, err
	}
	home := cr.Home
	if home == "" || s == Test && !(r.sandbox && rs.nsOK) {
		// A fixed clean_room.home a test task could write outlives the task: a test
		// lane gets a private layer over it (see policy), or an empty home of its own
		// where none can be had.
		home = filepath.Join(lane, "home")
	}
	tmp := filepath.Join(lane, "tmp")
	for _, d := range []string{home, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("clean room: %w", err)
		}
	}
	run.Dir, run.TempRoot = dir, tmp
	run.Env = scrubEnv(os.Environ(), cr.Env, rs.Repo.Root(), home, tmp)
	caches, err := rs.caches()
	if err != nil {
		return nil, err
	}
	if s == Test && !r.sandbox {
		// Nothing would keep a test task's writes out of the shared caches: it gets
		// empty ones of its own.
		if caches, err = privateCaches(caches, lane); err != nil {
			return nil, err
		}
	}
	for _, c := range caches {
		run.Env = append(run.Env, c.Env+"="+c.Dir)
	}
	if s == Test && r.sandbox && len(caches) > 0 {
		rs.checkLayers()
	}
	if r.sandbox {
		if run.Sandbox, err = rs.policy(Lane{Split: s, Tree: dir, Home: home, Caches: caches, Path: envValue(run.Env, "PATH")}); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// laneTree is the tree a lane of split s runs in: the room's own tree for its split
// while no task can write it; where tasks may write, the first such lane of a split
// takes it and later ones get their own.
func (r *Room) laneTree(s Split, lane string) (string, error) {
	rs := r.owner
	r.mu.Lock()
	defer r.mu.Unlock()
	view, leave := r.Dir, r.trainOnly()
	if s == Test {
		var err error
		if view, err = r.testTree(); err != nil {
			return "", err
		}
		leave = nil
	}
	if r.sandbox && len(rs.Config.CleanRoom.Writable) == 0 {
		return view, nil
	}
	if !r.claimed[view] {
		if r.claimed == nil {
			r.claimed = map[string]bool{}
		}
		r.claimed[view] = true
		return view, nil
	}
	dir := filepath.Join(lane, "repo")
	return dir, rs.materialize(r.tree, dir, leave)
}

// TestDir is the test split's tree: Dir plus the paths only test runs may see (Dir
// itself when there are none). It holds every carried path: the one to check them in.
func (r *Room) TestDir() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.testTree()
}

// testTree makes the test split's tree on first use; r.mu is held.
func (r *Room) testTree() (string, error) {
	if len(r.scoped) == 0 || r.base == "" {
		return r.Dir, nil
	}
	if r.testDir == "" {
		d := filepath.Join(r.base, "test-repo")
		if err := r.owner.materialize(r.tree, d, nil); err != nil {
			return "", err
		}
		r.testDir = d
	}
	return r.testDir, nil
}

// Lane is what one run request's policy is made from: the tree its tasks see, their
// HOME and the caches.
type Lane struct {
	Split      Split
	Tree, Home string
	Caches     []Cache
	Path       string // the tasks' PATH
}

// policy is the sandbox policy of every task of a lane, the one place it is made: it
// may write its HOME, the caches and the clean_room.writable folders of its tree (made
// here, empty or writable), and nothing else; the benchmark runner adds its TMPDIR and
// {trace_dir}. It may read only those, its tree, the system's folders, its PATH (see
// PathRead) and clean_room.read; a test lane also clean_room.test_only, while a train
// lane cannot read test_only or loop.sandbox.hidden even where clean_room.read covers
// them. It runs in PID (its own /proc), IPC and mount namespaces of its own, and with
// clean_room.network: false a network one with loopback. A test lane's writes to the
// caches go to a private layer (sandbox.Policy.Layered); without a mount namespace of
// its own, the caches are read-only to it.
func (rs *Rooms) policy(l Lane) (*sandbox.Policy, error) {
	read := append([]string{l.Tree}, sandbox.SystemRead()...)
	read = append(read, PathRead(l.Path)...)
	for _, r := range rs.Config.CleanRoom.Read {
		p, err := Expand(r, rs.Repo.Root())
		if err != nil {
			return nil, fmt.Errorf("clean room: read %s: %w", r, err)
		}
		read = append(read, p)
	}
	sc, err := rs.scope()
	if err != nil {
		return nil, err
	}
	test := l.Split == Test
	p, err := rs.writePolicy(l, !test || rs.nsOK)
	if err != nil {
		return nil, err
	}
	if test {
		read = append(read, sc.testRead...)
		if !rs.nsOK {
			read = append(read, cacheDirs(l.Caches)...)
		}
	} else {
		p.Hidden = sc.trainHidden
	}
	if !rs.nsOK {
		// Without namespaces the system's /proc is the only one: tasks need it.
		p.Read = append(read, "/proc")
		return p, nil
	}
	if test {
		p.Layered = cacheDirs(l.Caches)
		if rs.Config.CleanRoom.Home != "" && l.Home == rs.Config.CleanRoom.Home {
			p.Layered = append(p.Layered, l.Home) // its writes go to a private layer, as the caches'
		}
	}
	p.Read, p.Isolate, p.NoNetwork = read, true, !rs.Config.CleanRoom.Network
	if p.Sockets, err = socketsOf(rs.Config, rs.Repo.Root()); err != nil {
		return nil, err
	}
	return p, nil
}

// socketsOf are the pathname Unix sockets tasks may connect to under c: clean_room.sockets,
// and a Harbor benchmark's on Docker the engine's (harbor starts its containers through
// it, and what harbor runs in its own process, an agent module of the repository, holds
// it too: see the threat model).
func socketsOf(c *config.Config, root string) ([]string, error) {
	var out []string
	for _, s := range c.CleanRoom.Sockets {
		p, err := Expand(s, root)
		if err != nil {
			return nil, fmt.Errorf("clean room: sockets %s: %w", s, err)
		}
		out = append(out, p)
	}
	if h := c.Benchmark.Harbor; h != nil && (h.Env == "" || h.Env == "docker") {
		out = append(out, dockerSockets()...)
	}
	return out, nil
}

// dockerSockets are where the Docker engine listens: DOCKER_HOST's unix:// path when it
// names one, else the default's two names.
func dockerSockets() []string {
	if p, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok && filepath.IsAbs(p) {
		return []string{p}
	}
	return []string{"/var/run/docker.sock", "/run/docker.sock"}
}

// PathRead is what tasks may read of their PATH (and the loop keeps out of its agent's
// write set): each folder on it, and for one named
// bin or shims the folder above (a toolchain's root, where its libraries are: /usr/local/go,
// ~/.pyenv), unless that is / or the home folder.
func PathRead(path string) []string {
	home, _ := os.UserHomeDir()
	var out []string
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		dir = filepath.Clean(dir)
		out = append(out, dir)
		if b := filepath.Base(dir); b == "bin" || b == "shims" {
			if up := filepath.Dir(dir); up != "/" && up != home {
				out = append(out, up)
			}
		}
	}
	return out
}

// Expand resolves a clean_room.read (or loop.harness.read) path: ~/ is the home folder, a
// relative path is relative to the repository root.
func Expand(p, root string) (string, error) {
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	return filepath.Join(root, filepath.FromSlash(p)), nil
}

// envValue is the value of key in env (KEY=value entries), the last one winning.
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// writePolicy is what a lane's tasks may write; the caches only with caches.
func (rs *Rooms) writePolicy(l Lane, caches bool) (*sandbox.Policy, error) {
	write := []string{l.Home}
	if caches {
		write = append(write, cacheDirs(l.Caches)...)
	}
	for _, w := range rs.Config.CleanRoom.Writable {
		p := filepath.Join(l.Tree, filepath.FromSlash(w))
		// The folder may be absent from the tree (a build output) or carried
		// read-only: tasks get it empty or writable.
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("clean room: writable %s: %w", w, err)
		}
		if err := os.Chmod(p, 0o755); err != nil {
			return nil, fmt.Errorf("clean room: writable %s: %w", w, err)
		}
		write = append(write, p)
	}
	return &sandbox.Policy{Write: write}, nil
}
