//go:build unix

package main

import (
	"crypto/sha1"
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/golden"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/sandbox/ruleset"
	"github.com/hgate/hgate/internal/shimtest"
	"github.com/hgate/hgate/internal/timescale"
	"github.com/hgate/hgate/mcpserver"
	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	sandbox.Main(ruleset.Restrict) // before testscript.Main, which dispatches on argv[0] too
	if os.Getenv("GORACE") == "" {
		// The scripts' helper commands (mcp-call, tcpq) run as this binary, which
		// race-built otherwise sleeps a second at exit (the race runtime's
		// atexit_sleep_ms); testscript passes GORACE on.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	testscript.Main(shimFirst{m}, map[string]func(){
		"hgate": hgateUnderTest,
		// hgate mcp finds it on PATH, in the folder testscript puts both commands in.
		"hgate-mcp": func() { os.Exit(mcpserver.Main(os.Args[1:])) },
		// mcp-call is a script's MCP client (see mcpCall).
		"mcp-call": mcpCall,
		// tcpq is the attack scripts' localhost listener and client (see tcpq).
		"tcpq": tcpq,
		// provider is the attack scripts' model provider (see provider).
		"provider": provider,
		// ptyhold is the attack scripts' user terminal (see ptyhold).
		"ptyhold": ptyhold,
	})
}

// shimFirst runs the tests after putting hgate-sandbox beside this test binary
// (shimtest.Install), so the tests that run hgate's code in this process (the served
// commands, the exit codes) start their sandboxed tasks through the shim users install,
// not through this test binary (a larger one, dynamically linked: about twice the CPU a
// start); scriptBinaries copies that shim rather than asking go again. testscript.Main
// calls Run only in the test process itself, never in the commands it runs as this binary.
type shimFirst struct{ m *testing.M }

func (s shimFirst) Run() int {
	shimtest.Install()
	return s.m.Run()
}

// hgateUnderTest is the scripts' hgate: this binary's own, or the one HGATE_UNDER_TEST
// names, so that an attack script can be run against another build (an older release,
// to show it fails there) with its verdict read the same way.
func hgateUnderTest() {
	if bin := os.Getenv("HGATE_UNDER_TEST"); bin != "" {
		err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), os.Environ())
		fmt.Fprintf(os.Stderr, "HGATE_UNDER_TEST=%s: %v\n", bin, err)
		os.Exit(2)
	}
	main()
}

// hgateRaceBuilt says whether the scripts' hgate is race-built: the build HGATE_UNDER_TEST
// names, else the one scriptBinaries made. A script bounds hgate's memory with ulimit -v
// only where it is not, and an older hgate that reads a huge file whole must meet that bound.
func hgateRaceBuilt(built string) (bool, error) {
	bin := os.Getenv("HGATE_UNDER_TEST")
	if bin == "" {
		bin = filepath.Join(built, "hgate")
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return false, fmt.Errorf("HGATE_UNDER_TEST=%s: %v", bin, err)
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true, nil
		}
	}
	return false, nil
}

// TestScripts runs the end-to-end scripts in testdata/script: each drives the hgate binary
// the way a user or an agent would, against a git repository built in the script.
func TestScripts(t *testing.T) {
	bin := scriptBinaries(t)
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "script"),
		RequireExplicitExec: true,
		UpdateScripts:       golden.Updating(), // -update rewrites the cmp files with what hgate prints
		Setup: func(env *testscript.Env) error {
			if py := realPython(); py != "" { // ahead of a version manager's python3 shim
				env.Setenv("PATH", py+string(filepath.ListSeparator)+env.Getenv("PATH"))
			}
			if bin != "" { // ahead of testscript's folder, which holds this test binary as hgate
				env.Setenv("PATH", bin+string(filepath.ListSeparator)+env.Getenv("PATH"))
			}
			return hermeticGit(env)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":     waitFile,
			"alive":        alive,
			"cachetree":    cacheTree,
			"pausepipes":   pausePipes,
			"paused":       paused,
			"resume":       resume,
			"killcampaign": killCampaign,
			"loopkills":    loopKills,
			"diskfull":     diskFullCampaign,
			"timescale":    scaleTimeouts,
			"scaled":       scaledValue,
		},
		// [race]: hgate is race-built. [tmpfs]: root, and a tmpfs mounts (diskfull). [namespaces]: the sandbox's namespaces work here. [root]: the script runs as root, so it can also run hgate as an unprivileged
		// user with setpriv (CI runs as root).
		Condition: func(cond string) (bool, error) {
			if cond == "race" {
				return hgateRaceBuilt(bin)
			}
			if cond == "namespaces" {
				return sandbox.Namespaces() == nil, nil
			}
			if cond == "tmpfs" {
				return canMountTmpfs(), nil
			}
			if cond == "root" {
				_, err := exec.LookPath("setpriv")
				return os.Geteuid() == 0 && err == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
	})
}

// scriptBinaries builds hgate, hgate-sandbox, hgate-mcp and hgate-gateway as `go install ./cmd/...` does,
// into one folder the scripts find first on PATH, and returns it; "" when HGATE_UNDER_TEST
// names the hgate to run (this test binary then execs it). Without them every hgate a
// script ran, and every sandbox shim that hgate started (its own binary, with no
// hgate-sandbox beside it), was this test binary: race-built under -race, instrumented
// and several times slower, and paying the test's own packages' start on every process.
// HGATE_SCRIPTS_RACE=1 builds them with -race, for a run that looks for data races in
// the scripts' hgate processes too.
func scriptBinaries(t *testing.T) string {
	if os.Getenv("HGATE_UNDER_TEST") != "" {
		return ""
	}
	dir := t.TempDir()
	var flags []string
	if os.Getenv("HGATE_SCRIPTS_RACE") == "1" {
		flags = []string{"-race"}
	}
	for _, name := range []string{"hgate", "hgate-sandbox", "hgate-mcp", "hgate-gateway"} {
		if name == "hgate-sandbox" && flags == nil && copyInstalledShim(filepath.Join(dir, name)) == nil {
			continue // the same build, which TestMain put beside this binary (shimFirst)
		}
		// Linked once per build of the sources, not once per test binary (shimtest.Build).
		if err := shimtest.Build(filepath.Join(dir, name), "github.com/hgate/hgate/cmd/"+name, flags...); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// copyInstalledShim copies the hgate-sandbox shimtest.Install put beside this test binary
// to out, a file of out's own; an error when there is none (Install failed) or the copy
// failed, and the caller builds it.
func copyInstalledShim(out string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(exe), "hgate-sandbox"))
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o755)
}

// realPython is the folder of the interpreter that python3 on PATH starts, when that python3
// is a script (a version manager's shim, such as pyenv's, which starts bash and pyenv: about
// 0.9 CPU-s a start against 0.1 s for Python itself); "" otherwise. Ahead on the scripts'
// PATH, it gives hgate and the tasks it runs (which inherit PATH) the same interpreter
// without the shim's cost on every task: env_attacks starts Python about fifty times.
var realPython = sync.OnceValue(func() string {
	shim, err := exec.LookPath("python3")
	if err != nil {
		return ""
	}
	f, err := os.Open(shim)
	if err != nil {
		return ""
	}
	head := make([]byte, 2)
	_, err = f.Read(head)
	f.Close()
	if err != nil || string(head) != "#!" {
		return "" // the interpreter itself
	}
	out, err := exec.Command(shim, "-c", "import sys; print(sys.executable)").Output()
	exe := strings.TrimSpace(string(out))
	if err != nil || !filepath.IsAbs(exe) || filepath.Base(exe) != "python3" {
		return ""
	}
	return filepath.Dir(exe)
})

// hermeticGit makes git independent of the machine: no system or global config, a fixed
// identity and clock, so hashes in the scripts are the same everywhere.
func hermeticGit(env *testscript.Env) error {
	if bin := os.Getenv("HGATE_UNDER_TEST"); bin != "" {
		env.Setenv("HGATE_UNDER_TEST", bin) // scripts see only what Setup gives them
	}
	home := filepath.Join(env.WorkDir, ".home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	// Temporary folders outside the repository ($WORK), as /tmp is for a user: hgate's
	// clean rooms and the loop's folders must not show up as untracked files.
	tmp, err := os.MkdirTemp(filepath.Dir(env.WorkDir), "tmp-")
	if err != nil {
		return err
	}
	env.Setenv("TMPDIR", tmp)
	example, err := filepath.Abs(filepath.Join("..", "..", "workspace.example"))
	if err != nil {
		return err
	}
	env.Setenv("EXAMPLE", example)
	for k, v := range map[string]string{
		"HOME":                home,
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   "/dev/null",
		"GIT_AUTHOR_NAME":     "Agent",
		"GIT_AUTHOR_EMAIL":    "agent@example.com",
		"GIT_AUTHOR_DATE":     "2026-01-02T03:04:05Z",
		"GIT_COMMITTER_NAME":  "Agent",
		"GIT_COMMITTER_EMAIL": "agent@example.com",
		"GIT_COMMITTER_DATE":  "2026-01-02T03:04:05Z",
		"NO_COLOR":            "1",
		// No `git maintenance run --auto` after each of the scripts' own commits (a
		// process each, finding nothing to do in a script's few objects), as gittest.Env;
		// hgate's own git never runs it (gitrun) and drops these variables.
		"GIT_CONFIG_COUNT":   "1",
		"GIT_CONFIG_KEY_0":   "maintenance.auto",
		"GIT_CONFIG_VALUE_0": "false",
	} {
		env.Setenv(k, v)
	}
	return nil
}

// waitFile waits (up to a minute, stretched by HGATE_TEST_TIMESCALE) until a file exists and is not empty: a script's way to know that a
// background hgate has reached a point, such as a task having started.
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	// Not empty: a shell's `echo $! > FILE` creates the file before it writes the pid,
	// and a reader in between would see nothing.
	deadline := time.Now().Add(timescale.D(time.Minute))
	for time.Now().Before(deadline) {
		if fi, err := os.Stat(ts.MkAbs(args[0])); err == nil && fi.Size() > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear (with content) within %v", args[0], timescale.D(time.Minute))
}

// pausePipes makes DIR's two named pipes of a pause at an HGATE_FAULT point (see
// internal/fault): run hgate with HGATE_FAULT_PAUSE=$WORK/DIR, then paused and resume.
func pausePipes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pausepipes DIR")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	for _, name := range []string{"reached", "resume"} {
		ts.Check(syscall.Mkfifo(filepath.Join(dir, name), 0o600))
	}
}

// paused waits (up to a minute, like waitfile) until a background hgate has stopped at
// its HGATE_FAULT point, and writes its pid to DIR/pid. The read end is opened without
// blocking, so a process that never gets there does not hang the script.
func paused(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: paused DIR")
	}
	dir := ts.MkAbs(args[0])
	f, err := os.OpenFile(filepath.Join(dir, "reached"), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	ts.Check(err)
	defer f.Close()
	var got []byte
	buf := make([]byte, 64)
	for deadline := time.Now().Add(timescale.D(time.Minute)); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		n, _ := f.Read(buf) // 0 (no writer yet) or EAGAIN (a writer, nothing written yet)
		got = append(got, buf[:n]...)
		if len(got) > 0 && got[len(got)-1] == '\n' {
			ts.Check(os.WriteFile(filepath.Join(dir, "pid"), got, 0o644))
			return
		}
	}
	ts.Fatalf("no hgate paused at its HGATE_FAULT point within %v (read %q)", timescale.D(time.Minute), got)
}

// resume lets the hgate paused at DIR go on.
func resume(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: resume DIR")
	}
	path := filepath.Join(ts.MkAbs(args[0]), "resume")
	for deadline := time.Now().Add(timescale.D(time.Minute)); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil { // ENXIO: the paused hgate has not opened its end yet
			continue
		}
		_, err = f.Write([]byte("go\n"))
		ts.Check(errors.Join(err, f.Close()))
		return
	}
	ts.Fatalf("the paused hgate did not wait at %s within %v", path, timescale.D(time.Minute))
}

// alive checks whether the process whose pid is in a file still runs: a task's
// children must not outlive it.
func alive(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: [!] alive PIDFILE")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(args[0])))
	ts.Check(err)
	// A zombie still answers signal 0; reap-free check via /proc state where available.
	running := syscall.Kill(pid, 0) == nil
	if data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		if f := strings.Fields(string(data)); len(f) > 2 && f[2] == "Z" {
			running = false
		}
	}
	if _, err := os.Stat("/proc/self/ns/pid"); err == nil {
		// A sandboxed task runs in a PID namespace of its own, where $$ is not the pid
		// seen here: look for a process whose innermost pid it is and whose environment
		// names the pid file's folder (PIDDIR).
		running = nestedAlive(pid, filepath.Dir(ts.MkAbs(args[0])))
	}
	if running == neg {
		ts.Fatalf("process %d running: %v", pid, running)
	}
}

// nestedAlive reports whether a live process has pid as its pid in its innermost PID
// namespace (the last field of NSpid; the only one outside a namespace) and an
// environment that holds dir.
func nestedAlive(pid int, dir string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		status, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		var nspid []string
		zombie := false
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				nspid = strings.Fields(v)
			}
			if v, ok := strings.CutPrefix(line, "State:"); ok && strings.HasPrefix(strings.TrimSpace(v), "Z") {
				zombie = true
			}
		}
		if zombie || len(nspid) == 0 || nspid[len(nspid)-1] != strconv.Itoa(pid) {
			continue
		}
		if env, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil && strings.Contains(string(env), dir) {
			return true
		}
	}
	return false
}

// cacheTree forges an index: FROM's cache-tree extension (TREE) in place of
// TO's, with the checksum redone. Both must end with the extension, as git
// writes it after a commit or write-tree.
func cacheTree(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cachetree FROM TO")
	}
	from, to := ts.ReadFile(args[0]), ts.ReadFile(args[1])
	i, j := strings.LastIndex(from, "TREE"), strings.LastIndex(to, "TREE")
	if i < 0 || j < 0 {
		ts.Fatalf("no cache-tree extension in %s or %s", args[0], args[1])
	}
	out := []byte(to[:j] + from[i:len(from)-sha1.Size])
	sum := sha1.Sum(out)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), append(out, sum[:]...), 0o644))
}
