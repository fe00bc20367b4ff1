package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"
)

// pathOps are the os functions that act on a path by name. Outside internal/fsafe, hgate
// calls them only on paths no sandboxed process (agent, task, tool, qualification check)
// can write or could have written; under such a folder it goes through fsafe, which acts
// by directory descriptor and never follows a link (README, Threat model).
var pathOps = map[string]bool{
	"Open": true, "OpenFile": true, "Create": true, "ReadFile": true, "WriteFile": true,
	"Remove": true, "RemoveAll": true, "Rename": true, "Truncate": true, "Chmod": true,
	"MkdirAll": true, "ReadDir": true,
}

// byName are the files allowed to call pathOps, each with why its paths are not a
// sandbox's. "gap:" marks a file that does act by name where a sandbox could have
// written and is not yet moved to fsafe: the reason says what limits it today.
var byName = map[string]string{
	// A test helper, run from TestMain before any test.
	"internal/shimtest/shimtest.go": "test helper: builds hgate-sandbox beside the test binary",

	// Not hgate's product: test helpers and the example.
	"internal/gittest/gittest.go":  "test helper: builds test repositories",
	"internal/gittest/large.go":    "test helper: builds test repositories",
	"internal/gittest/memtemp.go":  "test helper: removes the temporary folder it made for a test process (and a killed one's)",
	"internal/gittest/template.go": "test helper: removes the test repositories it made in its own temporary folders",
	"internal/golden/golden.go":    "test helper: golden files of hgate's source",

	// Below everything: /proc, hgate's own temporary folders, the lock.
	"internal/proc/stat_linux.go":               "/proc, which no sandbox writes",
	"internal/sandbox/reap_linux.go":            "/proc/self, which no sandbox writes",
	"internal/sandbox/ns_linux.go":              "/proc/self/stat and the shim's own private folders (made 0700 before the sandboxed process starts; os.RemoveAll never follows a link)",
	"internal/sandbox/ruleset/ruleset_linux.go": "lists the folders along a hidden path to grant its siblings, before the sandboxed process starts",
	"internal/sandbox/mounts_linux.go":          "the shim lists a MountWrite folder in its own mount namespace before its command starts (names only; each entry is cloned without following a link)",
	"internal/sandbox/sockets_linux.go":         "/proc/<pid>/net/unix, the kernel's table, which no sandbox writes",
	"internal/scratch/scratch.go":               "lists and removes hgate's own temporary folders (os.RemoveAll removes by descriptor, never follows a link)",
	"internal/lock/flock_unix.go":               "the lock file in .git, which no sandbox can write (O_NOFOLLOW besides)",
	"internal/fault/fault.go":                   "the fault harness's folder, set by the test that runs hgate, outside every sandbox",
	"internal/statefile/statefile.go":           "hgate's state files in the workspace and .git/hgate, which no sandbox can write; written by an O_EXCL temporary file renamed over the name (never through a link)",

	// gitguard: .git is outside every sandbox's write set; the worktree is not.
	"gitguard/repo.go":                       ".git and its commondir file, which no sandbox can write",
	"gitguard/hidden.go":                     ".git/info/exclude and core.excludesFile, read to decide what is hidden (no sandbox writes .git or the user's configuration); the worktree's .gitignore files are read through fsafe",
	"gitguard/internal/lockfile/lockfile.go": "lock files in .git, which no sandbox can write",
	"gitguard/internal/refs/refs.go":         "refs in .git, which no sandbox can write",
	"gitguard/internal/objstore/packed.go":   "pack files in .git/objects, which no sandbox can write",
	"gitguard/internal/index/index.go":       ".git/index, which no sandbox can write",
	"gitguard/internal/index/map_unix.go":    ".git/index (mapped), which no sandbox can write",
	"gitguard/internal/index/map_other.go":   ".git/index, which no sandbox can write",
	"gitguard/internal/walk/dir_other.go":    "Windows and the systems other than Linux, macOS and FreeBSD (dir_fd.go there): no sandbox on them, and the agent runs as the user, so no folder is a sandbox's",
	"gitguard/candidate.go":                  "Materialize writes a tree into a new folder hgate makes (O_EXCL files, links made as links, never written through); the worktree files it commits are read through fsafe",
	"hooks/install.go":                       "`hgate hooks install`, run by the user on .git/hooks, which no sandbox can write",
	"ledger/ledger.go":                       "the ledger in .git/hgate, which no sandbox can write",
	"ledger/written.go":                      "the ledger in .git/hgate, which no sandbox can write",
	"ledger/disk.go":                         "the ledger's files in .git/hgate and the workspace, which no sandbox can write",
	"ledger/reset.go":                        "the ledger in .git/hgate, which no sandbox can write",
	"ledger/carry.go":                        "clean_room.carry paths, which are outside every sandbox's write set (the agent's protected list; tasks get copies)",
	"record/learnings.go":                    "learnings.md in the workspace, which no sandbox can write",
	"cleanroom/env.go":                       "builds a new room from the repository before any task runs in it (links copied as links, files O_EXCL); the source files in the worktree are read through fsafe",
	"cleanroom/room.go":                      "makes the room's private folders (0700) before any task runs in them",
	"cleanroom/caches.go":                    "makes the cache folders and their layers before any task runs",
	"cleanroom/temp.go":                      "lists and removes hgate's rooms parent (os.RemoveAll never follows a link)",
	"cleanroom/split.go":                     "chmod of the parent of a clean_room.test_only path, named by hgate.yaml, outside every task's write set",
	"benchmark/runner.go":                    "makes {trace_dir} itself (its parent is no task's) and removes the private one (os.RemoveAll never follows a link)",
	"gate/receipt.go":                        "receipts in the workspace, which no sandbox can write",
	"gate/heldout.go":                        "the held-out records in .git/hgate, which no sandbox can write",
	"gate/final.go":                          "the final split's scores in .git/hgate/heldout/final, which no sandbox can write (hidden with the held-out records)",
	"gate/finallabels.go":                    "the labels prepare read, in .git/hgate/heldout/final, which no sandbox can write (hidden with the held-out records)",
	"gate/best.go":                           "baseline.json in the workspace, which no sandbox can write",
	"gate/record.go":                         "results.tsv in the workspace, which no sandbox can write",
	"gate/steps.go":                          "makes the gate's traces folder, whose parent (the workspace) no sandbox can write",
	"gate/trialsauto.go":                     "removes a private traces folder (os.RemoveAll never follows a link)",
	"gate/bench.go":                          "makes, removes and renames {trace_dir} folders themselves, in the workspace (os.RemoveAll never follows a link)",
	"gate/prepare.go":                        "the workspace and hgate's copies of traces; the traces themselves are read through fsafe",
	"gate/preparephases.go":                  "the workspace's folders and prepare's private traces folder (os.RemoveAll never follows a link); the traces themselves are read through fsafe",
	"gate/refusals.go":                       "traces/refused in the workspace, which no sandbox can write (os.RemoveAll never follows a link)",
	"gate/baselinerun.go":                    "traces/refused, hgate's own copies (read from {trace_dir} through fsafe)",
	"harness/qualify/qualify.go":             "the report folder itself (its parent is hgate's), harness.json in the workspace, and the room's copy of the bundle written before any check runs; the bundle and traces are read through fsafe",
	"harness/qualify/standing.go":            "this iteration's previous qualification report, hgate's own file in the run's folder, which no sandbox can write",
	"gate/harnessapi.go":                     "harness.json in the workspace, which no sandbox can write",
	"harness/materialize.go":                 "writes the qualified bytes from refs/hgate/harness into the activation folder, made fresh by hgate before the agent starts (os.RemoveAll never follows a link)",
	"harness/skill.go":                       "copies hgate's materialized skills (read-only, from refs/hgate/harness) into the fresh activation folder, and codex's form of them into the iteration's fresh codex home, before the agent starts",
	"agentcli/codex.go":                      "makes the iteration's fresh codex home in hgate's activation folder before codex starts, and lists the user's codex home only to link its entries (names, never read through)",
	"gitguard/gitrun/gitrun.go":              ".git/config, .git/info/attributes and .git/hgate/changed-programs, which no sandbox can write",
	"internal/digest/digest.go":              "the digest key in .git/hgate, which no sandbox can write or read (created O_EXCL, 0600)",
	"gitguard/worktrees.go":                  "lists .git/worktrees and reads their gitdir files (no sandbox writes .git); an agent's linked worktree is filled and updated through fsafe",
	"agentapi/server.go":                     "the socket's private folder (0700), made by hgate",
	"mcpserver/proxy.go":                     "hgate-mcp runs inside the agent's sandbox, with the agent's rights: nothing it does is a deputy's",
	"loop/testspend.go":                      "the loop's private folder, hidden from every sandbox",
	"loop/generation.go":                     "the run's generation folders and the agents' linked worktrees themselves (os.RemoveAll never follows a link; their parent is hgate's)",
	"loop/run.go":                            "the run's folder, which no sandbox can write",
	"loop/runconfig.go":                      "run_config.json, in the run's folder, which no sandbox can write",
	"loop/preflight.go":                      "the preflight's scratch folder and its linked worktree themselves (os.RemoveAll never follows a link; their parent is hgate's)",
	"runlog/runs.go":                         "the run's JSON files, which no sandbox can write",
	"loop/resume.go":                         "the run's approval and refusal files, which no sandbox can write",
	"loop/genagent.go":                       "the iteration's folder and learnings.md, which no sandbox can write",
	"loop/agentout.go":                       "the agent's stdout and stderr files, created by hgate in the iteration's folder before the agent starts",
	"loop/agent.go":                          "creates the agent's stdin, stdout and stderr files in the iteration's folder before the agent starts",
	"loop/jailfolders_linux.go":              "puts back the attributes of the agent's MountWrite folders and the workspace files it writes by design after its processes are gone: it could not replace or rename them (mount points, or files in a folder it could not write)",
	"loop/jail.go":                           "makes the agent's private folders before it starts; lists the worktree between agent runs, links skipped; creates a preset's files O_EXCL (never through a link)",
	"loop/harness.go":                        "the harness folder itself and hgate's own files in the run's folder; the agent's answer is read through statefile (fsafe)",
	"loop/iteration.go":                      "the iteration's folders and the message file in the workspace, which no sandbox can write; the agent's TMPDIR is read through statefile (fsafe)",
	"loop/activate.go":                       "the activation folder, written by hgate from the registry for the agent to read",
	"loop/jailnet.go":                        "the egress proxy's log in the run's folder, which no sandbox can write",

	// gitguard's own readers of .git, where go-git's storage was.
	"gitguard/internal/gitconfig/gitconfig.go": "git's config files: .git/config, /etc/gitconfig and the user's, which no sandbox can write",
	"gitguard/internal/objstore/pack.go":       "pack files in .git/objects, which no sandbox can write",
	"gitguard/internal/objstore/loose.go":      "loose objects in .git/objects and their temporary files in .git/objects/pack, which no sandbox can write",
	"gitguard/internal/objstore/prefix.go":     "the folders of .git/objects, which no sandbox can write",
	"gitguard/internal/refs/loose.go":          "loose refs and packed-refs in .git, which no sandbox can write",
}

// TestNoDeputyFileOperations: outside internal/fsafe no non-test file calls a pathOps
// function unless byName lists it, and byName lists only files that do.
func TestNoDeputyFileOperations(t *testing.T) {
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..")
	calls := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "workspace.example" || rel == "internal/fsafe" || strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, c := range osCalls(f) {
			calls[rel] = append(calls[rel], fset.Position(c.Pos()).String()+" os."+c.Sel.Name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files := make([]string, 0, len(calls))
	for f := range calls {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		if _, ok := byName[f]; !ok {
			t.Errorf("%s acts on paths by name (%s): go through internal/fsafe, or list it in byName with why no sandbox can write those paths", f, strings.Join(calls[f], ", "))
		}
	}
	for f := range byName {
		if _, ok := calls[f]; !ok {
			t.Errorf("byName lists %s, which calls none of pathOps: take it out", f)
		}
	}
}

// osCalls are f's calls of os.<one of pathOps>.
func osCalls(f *ast.File) []*ast.SelectorExpr {
	osName := ""
	for _, im := range f.Imports {
		if im.Path.Value == `"os"` {
			osName = "os"
			if im.Name != nil {
				osName = im.Name.Name
			}
		}
	}
	if osName == "" {
		return nil
	}
	var out []*ast.SelectorExpr
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && pathOps[sel.Sel.Name] {
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName {
				out = append(out, sel)
			}
		}
		return true
	})
	return out
}
