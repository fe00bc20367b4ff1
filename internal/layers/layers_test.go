package layers

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/hgate/hgate/"

// layer is each package's row in the README's diagram, counted from the bottom.
var layer = map[string]int{
	"internal/proc": 0, "internal/fault": 0, "internal/golden": 0, "internal/doclinks": 0, "internal/fsafe": 0, "internal/human": 0, "internal/shimtest": 0, "internal/timescale": 0, "internal/timeline": 0, "internal/lazyre": 0,
	"internal/sandbox": 1, "internal/sandbox/ruleset": 2, "internal/lock": 1, "internal/statefile": 1, "internal/scratch": 1, "internal/digest": 1,
	"gitguard/internal/lockfile": 1, "gitguard/internal/pattern": 1, "gitguard/internal/objstore": 1, "gitguard/internal/gitconfig": 0,
	"gitguard/gitrun":        1,
	"gitguard/internal/refs": 2, "gitguard/internal/index": 2, "gitguard/internal/records": 3, "gitguard/internal/walk": 3,
	"gitguard":  4,
	"workspace": 5, "spend": 5, "suite": 5, "split": 5, "record": 5, "config": 5, "finalscore": 5,
	"ledger": 6, "benchmark": 6, "cleanroom": 6, "harness": 6, "gatewayapi": 6,
	"gate": 7, "answer": 7,
	"agentapi": 8, "agentout": 8, "agentcli": 8, "gateway": 8, "egress": 8, "harness/qualify": 8,
	"loop": 9, "hooks": 9, "runlog": 9,
	"report": 10, "check": 10,
	"mcpserver": 11,
	"cmd/hgate": 12, "cmd/hgate-mcp": 12, "cmd/hgate-sandbox": 12, "cmd/hgate-gateway": 12,
}

// sameLayer are the imports the diagram allows inside one layer.
var sameLayer = map[[2]string]bool{
	{"split", "suite"}:         true, // the pass mark
	{"cleanroom", "benchmark"}: true, // a room hands out benchmark runners
	{"agentcli", "agentout"}:   true, // an adapter reads its CLI's output with agentout's parsers
	{"gate", "answer"}:         true, // the gate's answer types, apart so the MCP server can render them
	{"loop", "runlog"}:         true, // the loop writes the run folders' records that runlog reads
	{"gitguard/internal/objstore", "gitguard/internal/pattern"}: false,
}

// never are imports the layers would allow but the owners forbid: the MCP server renders
// the commands' answers (package answer) and must not depend on the workflows that make
// them; the report reads the loop's run folders (package runlog), not the loop.
var never = map[[2]string]string{
	{"mcpserver", "gate"}: "the answer types and their text are package answer's",
	{"mcpserver", "loop"}: "the answer types and their text are package answer's",
	{"report", "loop"}:    "the run folders' records and their reader are package runlog's",
}

// only are third-party packages one hgate package alone may import; go-git's
// plumbing (the hash type) is every package's, the rest of go-git gitguard's.
var only = map[string]string{
	"go.yaml.in/yaml/v3":                     "config",
	"github.com/go-git/go-git/v5":            "gitguard",
	"github.com/landlock-lsm/go-landlock":    "internal/sandbox/ruleset",
	"github.com/modelcontextprotocol/go-sdk": "mcpserver",
}

// TestImportsFollowTheDiagram: every hgate package is in the diagram, and imports only
// packages in layers below its own (or the few same-layer imports it names); the
// libraries with one owner are imported by that owner alone (gitguard's internal
// packages count as gitguard).
func TestImportsFollowTheDiagram(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot list the packages")
	}
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		if name == "internal/gittest" || name == "internal/modelstub" || name == "internal/layers" || strings.HasPrefix(name, "workspace.example") {
			continue // test helpers, this package, the example
		}
		from, ok := layer[name]
		if !ok {
			t.Errorf("%s is not in the package diagram of CONTRIBUTING.md (add it there and here)", name)
			continue
		}
		seen++
		for _, imp := range p.Imports {
			for lib, owner := range only {
				if imp == "github.com/go-git/go-git/v5/plumbing" {
					continue
				}
				if (imp == lib || strings.HasPrefix(imp, lib+"/")) && name != owner && !strings.HasPrefix(name, owner+"/") {
					t.Errorf("%s imports %s, which only %s may", name, imp, owner)
				}
			}
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			to, ok := layer[dep]
			if !ok {
				continue // reported as a package of its own
			}
			if why, ok := never[[2]string{name, dep}]; ok {
				t.Errorf("%s imports %s: %s", name, dep, why)
			}
			if to > from || to == from && !sameLayer[[2]string{name, dep}] {
				t.Errorf("%s (layer %d) imports %s (layer %d): against the diagram", name, from, dep, to)
			}
		}
	}
	if seen < len(layer) {
		t.Errorf("go list showed %d of the diagram's %d packages", seen, len(layer))
	}
}

// notLinked are packages hgate's own binary must not link, with the binary that has them:
// their package initialisation is paid at the start of every command (--version, the
// pre-commit hook).
var notLinked = map[string]string{
	"net/http":   "hgate-gateway (the model gateway) and hgate-mcp",
	"crypto/tls": "hgate-gateway (the model gateway) and hgate-mcp",
}

// TestHgateDoesNotLinkHTTP: cmd/hgate's dependencies, tests left out, hold neither
// net/http nor crypto/tls.
func TestHgateDoesNotLinkHTTP(t *testing.T) { checkNotLinked(t, notLinked) }

// TestHgateDoesNotLinkGoGitStorage: hgate reads objects, refs and config with its own
// code (gitguard/internal/objstore, refs, gitconfig); go-git's storage and config
// reader would bring their package initialisation (encoding/gob through gcfg, URL
// regular expressions, billy's filesystem) back into every start.
func TestHgateDoesNotLinkGoGitStorage(t *testing.T) { checkNotLinked(t, goGitStorage) }

var goGitStorage = map[string]string{
	"github.com/go-git/go-git/v5":                           "no hgate binary",
	"github.com/go-git/go-git/v5/config":                    "no hgate binary",
	"github.com/go-git/go-git/v5/plumbing/format/config":    "no hgate binary",
	"github.com/go-git/go-git/v5/storage/filesystem":        "no hgate binary",
	"github.com/go-git/go-git/v5/storage/filesystem/dotgit": "no hgate binary",
	"github.com/go-git/go-git/v5/internal/url":              "no hgate binary",
	"github.com/go-git/go-billy/v5/osfs":                    "no hgate binary",
	"github.com/go-git/gcfg":                                "no hgate binary",
	"encoding/gob":                                          "no hgate binary",
}

// hgateDepsOf holds, by GOOS, what go list -deps listed for cmd/hgate: the tests that
// check what hgate links (HTTP, go-git's storage) ask go once per GOOS, not once each.
var hgateDepsOf sync.Map // GOOS → func() ([]string, error)

// hgateDeps lists cmd/hgate's dependencies with GOOS=goos.
func hgateDeps(goos string) ([]string, error) {
	list, _ := hgateDepsOf.LoadOrStore(goos, sync.OnceValues(func() ([]string, error) {
		cmd := exec.Command("go", "list", "-deps", module+"cmd/hgate")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		return strings.Fields(string(out)), err
	}))
	return list.(func() ([]string, error))()
}

// checkNotLinked fails for each package of banned that cmd/hgate's dependencies, tests
// left out, hold on linux, darwin or windows.
func checkNotLinked(t *testing.T, banned map[string]string) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not on PATH: cannot list the packages")
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		deps, err := hgateDeps(goos)
		if err != nil {
			t.Fatalf("go list (GOOS=%s): %v", goos, err)
		}
		if len(deps) < 50 {
			t.Fatalf("go list (GOOS=%s) listed %d packages: %q", goos, len(deps), deps)
		}
		for _, d := range deps {
			if where, ok := banned[d]; ok {
				t.Errorf("GOOS=%s: hgate links %s, which belongs in %s: find the import with go list -deps -f '{{.ImportPath}} {{.Imports}}' ./cmd/hgate", goos, d, where)
			}
		}
	}
}
