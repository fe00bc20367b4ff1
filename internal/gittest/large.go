package gittest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// The repositories of the performance targets, shared by the in-process benchmarks
// (gitguard, hooks) and the ones that run the hgate binary (cmd/hgate), so both
// measure the same thing.

// Large fills the empty folder dir with a committed repository (branch main) of
// tracked files in folders of 20 (src/dNNN/sNN/fNN.go) and ignored ones under
// node_modules/, and lets the index's stat data settle as after normal use (no racily
// clean entries), so git status trusts it.
func Large(tb TB, dir string, tracked, ignored int) {
	tb.Helper()
	writeTracked(tb, dir, tracked)
	for i := 0; i < ignored; i++ {
		writeFile(tb, dir, fmt.Sprintf("node_modules/pkg%04d/lib/m%02d.js", i/20, i%20), "module.exports = 1\n")
	}
	writeFile(tb, dir, ".gitignore", "node_modules/\n")
	initLarge(tb, dir)
	time.Sleep(1100 * time.Millisecond) // past the index's mtime: no racy entries
	gitIn(tb, dir, "update-index", "--really-refresh")
	gitIn(tb, dir, "status", "--porcelain")
}

// LargeStaged fills the empty folder dir with a committed repository of n tracked files
// in folders of 20, with an hgate.yaml allowing agent.py and src/d007/, and two staged
// changes on allowed paths (one at the top, one deep), as before a typical agent
// commit: what the pre-commit hook checks.
func LargeStaged(tb TB, dir string, n int) {
	tb.Helper()
	writeTracked(tb, dir, n)
	writeFile(tb, dir, "hgate.yaml", "allow: [agent.py, src/d007/]\nbenchmark:\n  tasks: {glob: \"tasks/*\"}\n  run: [sh, check.sh]\n")
	writeFile(tb, dir, "agent.py", "v1\n")
	initLarge(tb, dir)
	writeFile(tb, dir, "agent.py", "v2\n")
	writeFile(tb, dir, "src/d007/s03/f05.go", "package p // changed\n")
	gitIn(tb, dir, "add", "agent.py", "src/d007/s03/f05.go")
}

// initLarge commits what dir holds. The commit's automatic gc packs the objects, as in
// a repository in use; it runs in the foreground, so that it does not write in dir
// while the benchmark runs or removes dir.
func initLarge(tb TB, dir string) {
	tb.Helper()
	gitIn(tb, dir, "init", "-q", "-b", "main")
	gitIn(tb, dir, "config", "gc.autoDetach", "false")
	gitIn(tb, dir, "add", "-A")
	gitIn(tb, dir, "-c", "maintenance.auto=true", "commit", "-q", "-m", "bench") // Env turns it off
}

func writeTracked(tb TB, dir string, n int) {
	tb.Helper()
	for i := 0; i < n; i++ {
		writeFile(tb, dir, fmt.Sprintf("src/d%03d/s%02d/f%02d.go", i/400, (i/20)%20, i%20), fmt.Sprintf("package p // %d\n", i))
	}
}

func writeFile(tb TB, dir, p, content string) {
	tb.Helper()
	full := filepath.Join(dir, filepath.FromSlash(p))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		tb.Fatalf("%v", err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		tb.Fatalf("%v", err)
	}
}

func gitIn(tb TB, dir string, args ...string) {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = Env()
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
}
