package layers

import (
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// notInHgate are packages the hgate binary must not link, even indirectly, each with
// why: package initialisation and page faults are paid by every start of every command
// (README, Performance). A name ending in "/" stands for everything below it.
var notInHgate = map[string]string{
	// The MCP SDK: hgate-mcp's alone (README, "MCP server"). net/http and crypto/tls,
	// which it brings too, are the loop's model gateway's (package gateway) since the
	// loop runs one: measured, they add about 5.5 MB to the binary and no start time
	// above the noise of 200 starts of hgate --version.
	"github.com/modelcontextprotocol/": "the MCP SDK",
	// go-git's object package brings OpenPGP for commit signatures hgate never checks;
	// objstore decodes commits and trees instead.
	"github.com/go-git/go-git/v5/plumbing/object": "OpenPGP",
	"github.com/ProtonMail/go-crypto/":            "OpenPGP",
	"github.com/cloudflare/circl/":                "OpenPGP",
	// kong-completion parses six shell templates at init (22 KB in 258 allocations on
	// every start); cmd/hgate builds the same code and completions over Kong's model.
	"github.com/jotaen/": "kong-completion",
}

// TestHgateStartsLean: no package of notInHgate is among cmd/hgate's dependencies.
func TestHgateStartsLean(t *testing.T) {
	checkLinks(t, "cmd/hgate", notInHgate, nil, "every start")
}

// notInShim are packages the hgate-sandbox binary must not link: it starts twice for every
// sandboxed command (the reaping shim and its sandboxed leader), and exists only so that
// those starts skip hgate's package initialisation (README, Install). Anything more than
// internal/sandbox and what it needs brings that cost back.
var notInShim = map[string]string{
	"github.com/go-git/":      "go-git",
	"go.yaml.in/yaml/":        "yaml",
	"github.com/alecthomas/":  "Kong",
	"github.com/posener/":     "the shell completions",
	"html/template":           "the report's templates",
	"github.com/hgate/hgate/": "hgate's packages other than the sandbox's",
}

// shimMayLink are hgate's own packages hgate-sandbox links. internal/fault (the kill
// harness's pause in the shim's mounts) has no initialisation and needs only fmt, io, os
// and sync, which the shim links anyway.
var shimMayLink = map[string]bool{
	module + "cmd/hgate-sandbox": true, module + "internal/sandbox": true, module + "internal/sandbox/ruleset": true, module + "internal/proc": true,
	module + "internal/fault": true,
}

// TestShimStartsLean: cmd/hgate-sandbox links none of notInShim.
func TestShimStartsLean(t *testing.T) {
	checkLinks(t, "cmd/hgate-sandbox", notInShim, shimMayLink, "every sandboxed command two starts'")
}

// checkLinks fails for every package cmd links (but those of may) that matches a key of
// bad (a key ending in "/" stands for everything below it); cost says whose time it costs.
func checkLinks(t *testing.T, cmd string, bad map[string]string, may map[string]bool, cost string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot list the packages")
	}
	deps, err := depsOf(cmd)
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range deps {
		if may[dep] {
			continue
		}
		for b, what := range bad {
			if dep == b || strings.HasSuffix(b, "/") && strings.HasPrefix(dep, b) {
				t.Errorf("%s links %s (%s): it costs %s time (go list -deps shows which package brings it)", cmd, dep, what, cost)
			}
		}
	}
}

// depsOf lists what cmd links on this machine's GOOS; cmd/hgate's list is the one the
// checks of what hgate links share (hgateDeps), so go is asked once for it.
func depsOf(cmd string) ([]string, error) {
	if cmd == "cmd/hgate" {
		return hgateDeps(runtime.GOOS)
	}
	out, err := exec.Command("go", "list", "-deps", module+cmd).Output()
	return strings.Fields(string(out)), err
}

// psx is go-landlock's way of setting the Landlock ruleset on every thread. With cgo on
// (go test's default where a C compiler is found) it is C code, and a test binary that links
// it is linked by the C toolchain: about 1 CPU-s more a binary (CONTRIBUTING.md, `TestFewTestBinariesLinkC`).
const psx = "kernel.org/pub/linux/libs/security/libcap/psx"

// mayLinkC are the test binaries that link psx: those that run as the sandbox shim, whose
// package hands sandbox.Main the ruleset (package internal/sandbox/ruleset).
var mayLinkC = map[string]bool{
	module + "cmd/hgate.test": true, module + "cmd/hgate-sandbox.test": true, module + "internal/sandbox.test": true,
}

// TestFewTestBinariesLinkC: no test binary but mayLinkC's links psx; every other package's
// tests start their tasks through the hgate-sandbox shimtest installs.
func TestFewTestBinariesLinkC(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot list the packages")
	}
	out, err := exec.Command("go", "list", "-test", "-f", `{{.ImportPath}} {{join .Deps " "}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list -test: %v", err)
	}
	linked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		bin, deps, _ := strings.Cut(line, " ")
		if !strings.HasSuffix(bin, ".test") || !slices.Contains(strings.Fields(deps), psx) {
			continue
		}
		linked++
		if !mayLinkC[bin] {
			t.Errorf("%s links %s (through internal/sandbox/ruleset): only a binary that can be the sandbox shim may; start tasks through shimtest.Install's hgate-sandbox", bin, psx)
		}
	}
	if linked == 0 {
		t.Errorf("no test binary links %s: the check looks for the wrong package (go-landlock moved?)", psx)
	}
}
