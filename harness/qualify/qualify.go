// Package qualify is harness qualification: it checks the tools an agent built for
// itself (MCP servers, skills) in a clean room before any attempt may use them, and
// records each artifact's standing in harness.json and the qualified bytes on
// refs/hgate/harness. It uses a gate Env for the state it shares with the gate (the
// gated commit, the ledger), and is the one owner of qualification.
package qualify

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/cleanroom"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/harness"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/internal/human"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/workspace"
)

// Qualification is qualification.json: what each check of each artifact found.
type Qualification struct {
	CreatedAt string              `json:"created_at"`
	Status    string              `json:"status"` // passed, failed
	Tree      string              `json:"tree"`   // the gated commit's tree the room held
	Dir       string              `json:"dir"`    // the harness folder, relative to the repository
	Passed    int                 `json:"passed"`
	Failed    int                 `json:"failed"`
	Artifacts []QualifiedArtifact `json:"artifacts"`
	Report    string              `json:"report"` // where this file is
}

// QualifiedArtifact is one artifact's verdict.
type QualifiedArtifact struct {
	Kind   string   `json:"kind"`
	Name   string   `json:"name"`
	Path   string   `json:"path"`
	Status string   `json:"status"` // passed, failed
	Tools  []string `json:"tools"`
	Checks []Check  `json:"checks"`
	// Handshake is how an MCP server was opened in its smoke check: "server/discover"
	// (the 2026-07-28 specification's stateless requests) or "initialize" (legacy);
	// Protocol the version agreed.
	Handshake string `json:"handshake,omitempty"`
	Protocol  string `json:"protocol,omitempty"`
	// Content is the artifact folder's harness.ContentHash as it was checked.
	Content string `json:"content,omitempty"`
	// Standing is what harness.json records: qualified, or quarantined with Reason
	// (its own failure, or that of an artifact built in the same iteration).
	Standing string `json:"standing,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Check is one check of an artifact.
type Check struct {
	Name    string  `json:"name"`   // manifest, skill, smoke, self_test, tool_inventory
	Status  string  `json:"status"` // passed, failed, timeout
	Seconds float64 `json:"seconds"`
	Message string  `json:"message,omitempty"`
	Output  string  `json:"output,omitempty"` // the tail of what the check printed
}

// outputTail is how much of a check's output the report keeps.
const outputTail = 2000

// ReportDir is where hgate qualify writes its report.
func ReportDir(e *gate.Env) string {
	return workspace.Dir(e.Config.WorkspaceDir()).Path(workspace.Qualify)
}

// Options says where the report goes.
type Options struct {
	ReportDir string // emptied and rewritten
	// Final marks the loop's last qualification of an iteration (no artifact repair is
	// left): when it fails, the artifacts built or changed in the iteration are
	// quarantined with the ones that failed — all but Prior, the artifacts qualified
	// before the iteration and unchanged since (path → content digest), which only their
	// own failure quarantines. Iteration names the iteration in their reason.
	Final     bool
	Prior     map[string]string
	Iteration int
	// Earlier is the report (qualification.json) of this iteration's previous
	// qualification, or "": an artifact that timed out there and is unchanged since is
	// not run again (a server that never answers would cost its timeouts once more).
	Earlier string
}

// Run checks the tools in the harness folder in a clean room that holds the gated
// commit's tree and a copy of the harness folder, nothing else. Every command runs as a
// benchmark task does (the room's sandbox, a private TMPDIR and HOME, its whole process
// tree ended at its timeout); none sees the test split. An MCP server passes when it
// opens (server/discover, else initialize) and answers tools/list within its timeouts
// (through hgate-mcp smoke, the MCP SDK's client), lists at least one tool, and its
// self_test exits 0; a skill passes when its SKILL.md's front matter has name and
// description and only the fields Claude Code documents, each of its kind.
func Run(ctx context.Context, e *gate.Env, opts Options) (*Qualification, error) {
	hc := e.Config.Loop.Harness
	if err := e.CheckState(); err != nil {
		return nil, err
	}
	tree, err := e.GatedTree()
	if err != nil {
		return nil, fmt.Errorf("qualify: tree of the gated commit: %w", err)
	}
	mcpBin, err := proc.Sibling("hgate-mcp")
	if err != nil {
		return nil, fmt.Errorf("qualify: %v: install it next to hgate (go install ./cmd/... in hgate's source)", err)
	}
	if err := os.RemoveAll(opts.ReportDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.ReportDir, 0o755); err != nil {
		return nil, err
	}
	// Always a clean room, whatever clean_room.enabled or --no-clean-room say of the
	// benchmark: without one the room would be the worktree, and the harness folder it
	// empties and copies into would be the user's own.
	rooms := &cleanroom.Rooms{Config: e.Config, Repo: e.Repo, Log: e.Log, Enabled: true}
	rm, err := rooms.Open(tree)
	if err != nil {
		return nil, err
	}
	defer rm.Close()
	bundle := filepath.Join(rm.Dir, filepath.FromSlash(hc.Dir))
	benchmark.RemoveAll(bundle) // what the gated tree holds there is not the agent's bundle
	if err := copyBundle(filepath.Join(e.Repo.Root(), filepath.FromSlash(hc.Dir)), bundle); err != nil {
		return nil, fmt.Errorf("qualify: copy %s into the clean room: %w", hc.Dir, err)
	}
	arts, err := harness.Load(bundle)
	if err != nil {
		return nil, err
	}
	q := &Qualification{CreatedAt: statefile.Timestamp(e.Clock()), Tree: tree.String(), Dir: hc.Dir,
		Artifacts: []QualifiedArtifact{}, Report: e.Display(filepath.Join(opts.ReportDir, "qualification.json"))}
	qr := qualifier{e: e, room: rm, mcpBin: mcpBin, traces: opts.ReportDir}
	earlier := readEarlier(opts.Earlier)
	for _, a := range arts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		content, err := harness.ContentHash(bundle, a.Path)
		if err != nil {
			return nil, fmt.Errorf("qualify: %w", err)
		}
		qa, ok := notAgain(earlier, a.Path, content)
		if !ok {
			qa = qr.artifact(ctx, a)
		}
		qa.Content = content
		if qa.Status == "passed" {
			q.Passed++
		} else {
			q.Failed++
		}
		q.Artifacts = append(q.Artifacts, qa)
	}
	q.Status = "passed"
	if q.Failed > 0 {
		q.Status = "failed"
	}
	stand(q, opts)
	data, err := statefile.EncodeJSON(q)
	if err != nil {
		return nil, err
	}
	if err := writeReport(opts.ReportDir, data); err != nil {
		return nil, err
	}
	fault.Point("qualify-checked") // judged, nothing registered: the next run judges again
	if err := register(e, q, bundle, data); err != nil {
		return nil, err
	}
	return q, nil
}

// register commits the qualified bundle and its report to HarnessRef and
// records each artifact's standing in harness.json through the ledger: what passed is
// qualified, what failed quarantined, keyed by its content, so a changed artifact is
// judged again.
func register(e *gate.Env, q *Qualification, bundle string, report []byte) error {
	files, err := bundleFiles(bundle)
	if err != nil {
		return fmt.Errorf("qualify: %w", err)
	}
	files["qualification.json"] = report
	if tip, err := e.Repo.Ref(gitguard.HarnessRef); err == nil && !tip.IsZero() {
		old, err := e.Repo.FilesAt(tip)
		if err != nil {
			return fmt.Errorf("qualify: %s: %w", gitguard.HarnessRef, err)
		}
		for p := range old {
			if _, ok := files[p]; !ok {
				files[p] = nil // removed since
			}
		}
	}
	commit, err := e.Repo.CommitFiles(gitguard.HarnessRef, files, fmt.Sprintf("qualify: %d passed, %d failed (tree %s)", q.Passed, q.Failed, q.Tree[:7]))
	if err != nil {
		return fmt.Errorf("qualify: record %s: %w", gitguard.HarnessRef, err)
	}
	fault.Point("qualify-committed") // on the ref, not in harness.json: the ref's tip is evidence only
	reg := &harness.Registry{UpdatedAt: q.CreatedAt, Commit: commit.String(), Artifacts: []harness.Entry{}}
	for _, a := range q.Artifacts {
		reg.Artifacts = append(reg.Artifacts, harness.Entry{Kind: a.Kind, Name: a.Name, Path: a.Path, Status: a.Standing,
			Content: a.Content, Reason: a.Reason, Handshake: a.Handshake, Report: q.Report, Judged: q.CreatedAt})
	}
	kept := 0
	for _, en := range reg.Artifacts {
		if en.Status == harness.Qualified {
			kept++
		}
	}
	return e.ApplyState(fmt.Sprintf("qualify: %d qualified, %d quarantined", kept, len(reg.Artifacts)-kept), workspace.Harness, reg.Marshal)
}

// failure is the first failed check of an artifact, as one line.
func (a QualifiedArtifact) failure() string {
	for _, c := range a.Checks {
		if c.Status != "passed" {
			return c.Name + " " + c.Status + ": " + c.Message
		}
	}
	return ""
}

// bundleFiles reads the regular files of the harness folder copy, keyed harness/<path>.
// The checks ran in that folder: it is read by descriptor (fsafe), every file bounded.
func bundleFiles(bundle string) (map[string][]byte, error) {
	files := map[string][]byte{}
	root, err := fsafe.OpenRoot(bundle)
	if errors.Is(err, fs.ErrNotExist) {
		return files, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	err = root.Walk(func(name string, d fs.DirEntry) error {
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := root.ReadFile(name, bundleFileMax)
		files["harness/"+name] = data
		return err
	})
	return files, err
}

// bundleFileMax bounds each file of a harness folder hgate copies or reads.
const bundleFileMax = harness.FileMax

// qualifier runs the checks of one qualification.
type qualifier struct {
	e      *gate.Env
	room   *cleanroom.Room
	mcpBin string
	traces string
}

func (qr qualifier) artifact(ctx context.Context, a harness.Artifact) QualifiedArtifact {
	qa := QualifiedArtifact{Kind: a.Kind, Name: a.Name, Path: a.Path, Tools: []string{}, Checks: []Check{}}
	// A check's message and a tool's name can be the agent's text (a server's error, its
	// tools/list), which the user's terminal and hgate's log show: control characters in
	// them are written out.
	add := func(c Check) {
		c.Message = human.Printable(c.Message, false)
		qa.Checks = append(qa.Checks, c)
	}
	switch {
	case a.Problem != "" && a.Kind == harness.KindSkill:
		add(Check{Name: "skill", Status: "failed", Message: a.Problem})
	case a.Problem != "":
		add(Check{Name: "manifest", Status: "failed", Message: a.Problem})
	case a.Kind == harness.KindSkill:
		add(Check{Name: "skill", Status: "passed"})
	default:
		m := a.MCP
		argv := append([]string{qr.mcpBin, "smoke", "--startup-timeout", m.Startup.String(), "--tool-timeout", m.Tool.String(), "--", m.Command}, m.Args...)
		smoke, line := qr.run(ctx, "smoke."+a.Name, m.Cwd, argv, m.Startup+m.Tool+10*time.Second, a.Path+"/"+m.Manifest+": startup_timeout_sec + tool_timeout_sec")
		smoke = startupTimeout(smoke, a.Path+"/"+m.Manifest)
		if smoke.Status == "passed" {
			for _, t := range line.Tools {
				qa.Tools = append(qa.Tools, human.Printable(t, false))
			}
			qa.Handshake, qa.Protocol = line.Handshake, line.Protocol
		}
		add(smoke)
		if m.SelfTest == nil {
			add(Check{Name: "self_test", Status: "failed", Message: "no self_test in the manifest (expected a command that exits 0, e.g. \"self_test\": true)"})
		} else {
			st, _ := qr.run(ctx, "self_test."+a.Name, m.Cwd, append([]string{qr.mcpBin, "selftest", "--"}, m.SelfTest...), m.SelfTestTime, a.Path+"/"+m.Manifest+": self_test_timeout_sec")
			add(st)
		}
		inv := Check{Name: "tool_inventory", Status: "passed"}
		if len(qa.Tools) == 0 {
			inv.Status, inv.Message = "failed", "the server lists no tool"
		}
		add(inv)
	}
	qa.Status = "passed"
	for _, c := range qa.Checks {
		if c.Status != "passed" {
			qa.Status = "failed"
		}
	}
	return qa
}

// widen gives a check's sandbox what qualification adds to a benchmark task's: hgate-mcp's
// own folder and loop.harness.read to read, and no network unless loop.harness.network.
func (qr qualifier) widen(run *benchmark.Runner) error {
	if run.Sandbox == nil {
		return nil
	}
	hc := qr.e.Config.Loop.Harness
	p := *run.Sandbox
	p.Read = append(slices.Clone(p.Read), filepath.Dir(qr.mcpBin))
	for _, r := range hc.Read {
		abs, err := cleanroom.Expand(r, qr.e.Repo.Root())
		if err != nil {
			return fmt.Errorf("loop.harness.read %s: %w", r, err)
		}
		p.Read = append(p.Read, abs)
	}
	p.NoNetwork = p.Isolate && !hc.Network
	run.Sandbox = &p
	return nil
}

// startupTimeout marks a smoke that got no answer within the manifest's startup or tool
// timeout as a timeout (hgate-mcp smoke ended the server at that deadline), naming the
// manifest's key.
func startupTimeout(c Check, manifest string) Check {
	if c.Status != "failed" || !strings.Contains(c.Message, "no answer within") {
		return c
	}
	key := "startup_timeout_sec"
	if strings.HasPrefix(c.Message, "tools/list") {
		key = "tool_timeout_sec"
	}
	c.Status, c.Message = "timeout", c.Message+" ("+manifest+": "+key+")"
	return c
}

// checkLine is the result line hgate-mcp smoke and selftest print.
type checkLine struct {
	Reward    *float64 `json:"reward"`
	Tools     []string `json:"tools"`
	Message   string   `json:"message"`
	Handshake string   `json:"handshake"`
	Protocol  string   `json:"protocol"`
}

// run runs one check command as a benchmark task of its own, in cwd of the room, bounded
// by timeout, the setting key names; its trace is <traces>/<id>.log.
func (qr qualifier) run(ctx context.Context, id, cwd string, argv []string, timeout time.Duration, key string) (Check, checkLine) {
	name, _, _ := strings.Cut(id, ".")
	c := Check{Name: name}
	run, err := qr.room.Runner(benchmark.NewPool(1), cleanroom.Train)
	if err != nil {
		c.Status, c.Message = "failed", err.Error()
		return c, checkLine{}
	}
	if err := qr.widen(run); err != nil {
		c.Status, c.Message = "failed", err.Error()
		return c, checkLine{}
	}
	run.Dir = filepath.Join(run.Dir, filepath.FromSlash(cwd))
	run.Config.Run, run.Config.Batch, run.Config.Harbor = argv, nil, nil
	run.Config.TaskTimeout, run.Config.Env, run.TimeoutKey = timeout, nil, key
	start := time.Now()
	out, err := run.Run(ctx, benchmark.Request{Split: "qualify", Tasks: []string{id}, TraceDir: qr.traces})
	c.Seconds = time.Since(start).Round(time.Millisecond).Seconds()
	if err != nil {
		c.Status, c.Message = "failed", err.Error()
		return c, checkLine{}
	}
	res := out.Results[id]
	trace, _ := fsafe.ReadFile(qr.traces, id+".log", benchmark.TraceMax) // the checks could write there
	c.Output = tail(trace, outputTail)
	line := lastCheckLine(trace)
	switch {
	case strings.HasPrefix(res.Reason, "timed out"):
		c.Status, c.Message = "timeout", res.Reason+" ("+key+")"
	case res.Passed():
		c.Status = "passed"
	case line.Message != "":
		c.Status, c.Message = "failed", line.Message
	default:
		c.Status, c.Message = "failed", res.Reason
	}
	return c, line
}

// lastCheckLine finds the result line: the last line of the trace that decodes as one.
func lastCheckLine(trace []byte) checkLine {
	var found checkLine
	sc := bufio.NewScanner(bytes.NewReader(trace))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l checkLine
		if b := sc.Bytes(); bytes.HasPrefix(b, []byte(`{"reward"`)) && json.Unmarshal(b, &l) == nil && l.Reward != nil {
			found = l
		}
	}
	return found
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// copyBundle copies the harness folder into the room: folders, regular files and
// symlinks (as links); anything else is left out. A missing folder copies nothing. The
// agent wrote src: it is read by descriptor (fsafe), every file bounded.
func copyBundle(src, dst string) error {
	root, err := fsafe.OpenRoot(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	return root.Walk(func(name string, d fs.DirEntry) error {
		to := filepath.Join(dst, filepath.FromSlash(name))
		switch t := d.Type(); {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case t&fs.ModeSymlink != 0:
			target, err := root.Readlink(name)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case t.IsRegular():
			err := copyOne(root, name, to)
			if errors.Is(err, fsafe.ErrLinked) || errors.Is(err, fsafe.ErrNotRegular) || errors.Is(err, fsafe.ErrTooLarge) {
				// A hard link, a file swapped for a FIFO or one over the bound (a sparse
				// file of 64 GB): the agent's doing, never read. Left out of the copy, so
				// the artifact naming it fails its checks, rather than ending the loop.
				return nil
			}
			return err
		}
		return nil
	})
}

// writeReport writes qualification.json into the report folder, which is every check's
// {trace_dir}: a check may have left anything at that name (a link to a file it cannot
// read, a FIFO, a folder). What is there is removed without being followed and a fresh
// file renamed in, so no check can make the report fail to write or write elsewhere.
func writeReport(dir string, data []byte) error {
	root, err := fsafe.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.RemoveAll("qualification.json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return root.Replace("qualification.json", bytes.NewReader(data), 0o644)
}

// copyOne copies the regular file name of root to the new file to, with its mode.
func copyOne(root *fsafe.Root, name, to string) error {
	in, err := root.Open(name, bundleFileMax)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()|0o400)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, io.LimitReader(in, bundleFileMax))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
