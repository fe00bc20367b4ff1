package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// What one package of this module may allocate at initialisation: every start of every
// command pays it, --version and git's pre-commit hook included. Compile regular
// expressions (internal/lazyre) and parse templates on first use, and build tables in
// functions.
const initBytes, initAllocs = 1024, 16

// initBounds are the packages allowed more, each with why.
var initBounds = map[string][2]int{
	"config":     {4096, 64}, // hgate.yaml's section tables, built by generic constructors
	"gatewayapi": {2048, 4},  // the default price table: one map literal
}

var initLine = regexp.MustCompile(`(?m)^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)

// TestInitWork runs hgate --version with GODEBUG=inittrace=1 and fails for every package of
// this module whose initialisation allocates more than its bound; it logs those that
// allocate at all. HGATE_UNDER_TEST names another build to check.
func TestInitWork(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hgate")
	}
	bin := os.Getenv("HGATE_UNDER_TEST")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "hgate")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	cmd := exec.Command(bin, "--version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hgate --version: %v\n%s", err, out)
	}
	const prefix = "github.com/hgate/hgate/"
	seen := false
	for _, m := range initLine.FindAllStringSubmatch(string(out), -1) {
		pkg, ok := strings.CutPrefix(m[1], prefix)
		if !ok {
			continue
		}
		seen = true
		bytes, _ := strconv.Atoi(m[2])
		allocs, _ := strconv.Atoi(m[3])
		bound, ok := initBounds[pkg]
		if !ok {
			bound = [2]int{initBytes, initAllocs}
		}
		if bytes > 0 {
			t.Logf("%s: %d bytes in %d allocations at initialisation", pkg, bytes, allocs)
		}
		if bytes > bound[0] || allocs > bound[1] {
			t.Errorf("%s allocates %d bytes in %d allocations at initialisation, more than %d in %d: make the work lazy or static", pkg, bytes, allocs, bound[0], bound[1])
		}
	}
	if !seen {
		t.Fatalf("inittrace listed no package of %s:\n%s", prefix, out)
	}
}
