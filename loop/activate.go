package loop

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/harness"
	"github.com/hgate/hgate/harness/qualify"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/internal/proc"
	"github.com/hgate/hgate/internal/statefile"
)

// activationName is the file in the iteration's activation folder that says what the
// iteration's agent runs were given: read back by a resumed run, so a resumed session
// finds the configuration its attempt had.
const activationName = "activation.json"

// activation is what the agent is given of the tools it built for itself in one
// iteration: the qualified artifacts whose folders are unchanged since they were judged.
// Everything it needs is written into the iteration's activation folder in the run's
// folder, never into the worktree or the user's ~/.claude or ~/.codex.
type activation struct {
	MCP    []activeMCP   `json:"mcp"`
	Skills []activeSkill `json:"skills"`
	// Hidden counts the quarantined artifacts, which the agent is never shown.
	Hidden int `json:"quarantined_hidden"`
	// MCPConfig is a Claude Code --mcp-config file of the active servers ("" = none);
	// PluginDir a Claude Code plugin holding the active skills ("" = none).
	MCPConfig string `json:"mcp_config,omitempty"`
	PluginDir string `json:"plugin_dir,omitempty"`
	// SkillsDir holds a copy of each active skill's folder ("" = none).
	SkillsDir string `json:"skills_dir,omitempty"`
	// Home is the folder the agent's CLI made to find the active tools in, which its
	// runs get as their own home and may write ("" = none): codex's CODEX_HOME, the
	// user's linked entry by entry with the active skills added. (The key keeps the name
	// it had when codex alone made one, so a resumed run reads an earlier activation.)
	Home string `json:"codex_home,omitempty"`
	// Log is where the active servers' proxies append one line per tools/call (the
	// run's mcp_calls.jsonl); Proxy is hgate-mcp ("" = not installed: no log).
	Log   string `json:"mcp_calls,omitempty"`
	Proxy string `json:"proxy,omitempty"`
	// Iteration labels the proxies' lines.
	Iteration int `json:"iteration"`
}

// activeMCP is one active MCP server, as the agent's CLI starts it.
type activeMCP struct {
	Name         string   `json:"name"`
	Path         string   `json:"path"`
	Command      string   `json:"command"`
	Args         []string `json:"args"`
	Cwd          string   `json:"cwd"` // absolute
	Tools        []string `json:"tools"`
	EnabledTools []string `json:"enabled_tools,omitempty"`
	StartupSec   int      `json:"startup_timeout_sec"`
	ToolSec      int      `json:"tool_timeout_sec"`
}

// activeSkill is one active skill.
type activeSkill struct {
	Name        string `json:"name"`
	Path        string `json:"path"`
	Description string `json:"description"`
	File        string `json:"file"` // its SKILL.md, in the activation folder
}

// activator makes (or, resumed, reads back) an iteration's activation and keeps the
// last one: every agent run of the iteration is given the same tools. It is a view of the
// runner's state, taken where an agent run needs its tools (runner.tools).
type activator struct {
	cfg    config.Harness
	reg    func() (*harness.Registry, error) // the repository's harness registry
	repo   *gitguard.Repo
	cli    agentcli.CLI
	runDir string // runs/<id>: the iterations' folders and mcp_calls.jsonl
	log    io.Writer
	last   *lastActivation
	// home makes the single agent's private CLI home, which an activation's CLI home
	// builds on ("" = none: the user's; nil = none).
	home func() (string, error)
}

// lastActivation is the last activation made or read, and its iteration.
type lastActivation struct {
	act  *activation
	iter int
}

// tools is the run's activator as it stands.
func (r *runner) tools() activator {
	return activator{cfg: r.cfg.Harness, reg: r.env.Registry, repo: r.repo, cli: r.cli(), runDir: r.dir, log: r.log, last: &r.act,
		home: func() (string, error) { return r.cliHome(0) }}
}

// activation is the iteration's activation: read from its folder when a resumed run
// made it already, else made from the registry now. Without loop.harness.enabled it is
// empty.
func (t activator) activation(n int) (*activation, error) {
	if !t.cfg.Enabled {
		return &activation{}, nil
	}
	if t.last.act != nil && t.last.iter == n {
		return t.last.act, nil
	}
	dir := filepath.Join(iterDir(t.runDir, n), "activation")
	file := filepath.Join(dir, activationName)
	var a activation
	if data, err := os.ReadFile(file); err == nil && json.Unmarshal(data, &a) == nil {
		*t.last = lastActivation{act: &a, iter: n}
		return &a, nil
	}
	act, err := t.activate(dir, n)
	if err != nil {
		return nil, fmt.Errorf("loop: activate the agent's tools: %w", err)
	}
	if err := writeJSON(file, act); err != nil {
		return nil, err
	}
	*t.last = lastActivation{act: act, iter: n}
	return act, nil
}

// activate writes the activation folder from the registry: only artifacts hgate
// qualified whose content is still what it judged.
func (t activator) activate(dir string, n int) (*activation, error) {
	if err := harness.Unseal(dir); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	act := &activation{MCP: []activeMCP{}, Skills: []activeSkill{}, Iteration: n}
	reg, err := t.reg()
	if err != nil || reg == nil {
		return act, err
	}
	root := t.repo.Root()
	// What runs is what qualified: the bytes on refs/hgate/harness, read-only in the
	// activation folder, never the worktree's folder the agent can still edit.
	mat := filepath.Join(dir, "harness")
	if err := harness.Materialize(t.repo, reg, mat); err != nil {
		return nil, err
	}
	fault.Point("loop-activated") // the qualified bytes in the folder, activation.json not yet written
	arts, err := harness.Load(mat)
	if err != nil {
		return nil, err
	}
	for _, e := range reg.Artifacts {
		if e.Status == harness.Quarantined {
			act.Hidden++
		}
	}
	hdir := filepath.Join(root, filepath.FromSlash(t.cfg.Dir))
	tools := reportTools(root, reg)
	for _, a := range arts {
		if !stillQualified(reg, a, hdir, mat) {
			continue
		}
		if err := act.add(a, tools[a.Path], activeServer(a, root, t.cfg.Dir, mat), dir, mat); err != nil {
			return nil, err
		}
	}
	return act, t.write(act, dir)
}

// stillQualified says whether artifact a (as materialized in mat) is one the registry
// qualified and whose content, in the harness folder hdir and on the ref, is still the
// content it judged.
func stillQualified(reg *harness.Registry, a harness.Artifact, hdir, mat string) bool {
	e, ok := reg.Find(a.Path)
	if !ok || e.Status != harness.Qualified || a.Problem != "" || e.Kind != a.Kind {
		return false
	}
	if content, err := harness.ContentHash(hdir, a.Path); err != nil || content != e.Content {
		return false // changed since it was judged: the next qualification judges it again
	}
	content, err := harness.ContentHash(mat, a.Path)
	return err == nil && content == e.Content // else the ref does not hold the bytes judged
}

// activeServer is MCP artifact a as the agent's CLI starts it, from its materialized
// copy in mat of the harness folder hdir of the worktree root (zero for another kind).
func activeServer(a harness.Artifact, root, hdir, mat string) activeMCP {
	if a.Kind != harness.KindMCP {
		return activeMCP{}
	}
	m := a.MCP
	command, args, cwd := m.Relocate(root, hdir, mat)
	return activeMCP{Name: a.Name, Path: a.Path, Command: command, Args: args, Cwd: cwd, EnabledTools: m.EnabledTools,
		StartupSec: max(1, int(m.Startup.Seconds())), ToolSec: max(1, int(m.Tool.Seconds()))}
}

// add makes artifact a active: an MCP server as srv, with the tools its qualification
// listed; a skill copied from mat into the activation folder dir.
func (act *activation) add(a harness.Artifact, tools []string, srv activeMCP, dir, mat string) error {
	switch a.Kind {
	case harness.KindMCP:
		srv.Tools = tools
		act.MCP = append(act.MCP, srv)
	case harness.KindSkill:
		to := filepath.Join(dir, "skills", a.Name)
		if err := harness.CopyTree(filepath.Join(mat, filepath.FromSlash(a.Path)), to, nil); err != nil {
			return err
		}
		act.Skills = append(act.Skills, activeSkill{Name: a.Name, Path: a.Path, Description: a.Skill.Description,
			File: filepath.Join(to, "SKILL.md")})
	}
	return nil
}

// write writes what the agent's CLI is given of the active tools into the
// activation folder dir: the skills' plugin and CLI home, the servers' config and the
// proxy that logs their calls.
func (t activator) write(act *activation, dir string) error {
	if len(act.Skills) > 0 {
		act.SkillsDir = filepath.Join(dir, "skills")
		if err := act.claudePlugin(dir); err != nil {
			return err
		}
		tools := act.tools()
		if t.home != nil {
			var err error
			if tools.CLIHome, err = t.home(); err != nil {
				return err
			}
		}
		var err error
		if act.Home, err = t.cli.Activate(dir, tools); err != nil {
			return err
		}
	}
	if len(act.MCP) == 0 {
		return nil
	}
	act.Log = filepath.Join(t.runDir, mcpCallsName)
	if p, err := proc.Sibling("hgate-mcp"); err == nil {
		act.Proxy = p
	} else {
		fmt.Fprintf(t.log, "[loop] %v: the agent's MCP servers run without hgate's proxy, and their calls are not logged\n", err)
	}
	return act.writeMCPConfig(filepath.Join(dir, "claude-mcp.json"))
}

// writeMCPConfig writes the active servers as a Claude Code --mcp-config file.
func (act *activation) writeMCPConfig(path string) error {
	act.MCPConfig = path
	servers := map[string]any{}
	for _, m := range act.MCP {
		command, args := act.serverCommand(m)
		servers[m.Name] = map[string]any{"type": "stdio", "command": command, "args": args}
	}
	return writeJSON(path, map[string]any{"mcpServers": servers})
}

// claudePlugin makes the activation folder's Claude Code plugin (--plugin-dir): its
// manifest and the active skills, so claude finds them without a file in the worktree or
// in ~/.claude.
func (act *activation) claudePlugin(dir string) error {
	act.PluginDir = filepath.Join(dir, "claude-plugin")
	if err := os.MkdirAll(filepath.Join(act.PluginDir, ".claude-plugin"), 0o755); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(act.PluginDir, ".claude-plugin", "plugin.json"), map[string]string{
		"name": "hgate-harness", "version": "1.0.0", "description": "The tools the agent built for itself that hgate qualified",
	}); err != nil {
		return err
	}
	return harness.CopyTree(act.SkillsDir, filepath.Join(act.PluginDir, "skills"), nil)
}

// serverCommand is how an active server is started: in its cwd, behind hgate-mcp's proxy
// (which logs each tools/call to the activation's log) when hgate-mcp is installed.
func (act *activation) serverCommand(m activeMCP) (string, []string) {
	if act.Proxy == "" {
		return "sh", append([]string{"-c", `cd "$0" && exec "$@"`, m.Cwd, m.Command}, m.Args...)
	}
	inner := append([]string{"--", m.Command}, m.Args...)
	return act.Proxy, append([]string{"proxy", "--server", m.Name, "--cwd", m.Cwd, "--log", act.Log,
		"--iteration", strconv.Itoa(act.Iteration), "--tool-timeout", strconv.Itoa(m.ToolSec) + "s"}, inner...)
}

// tools are the active tools in the forms a CLI is given them.
func (act *activation) tools() agentcli.Tools {
	t := agentcli.Tools{MCPConfig: act.MCPConfig, PluginDir: act.PluginDir, SkillsDir: act.SkillsDir, Home: act.Home}
	for _, m := range act.MCP {
		command, args := act.serverCommand(m)
		t.MCP = append(t.MCP, agentcli.MCPServer{Name: m.Name, Command: command, Args: args,
			EnabledTools: m.EnabledTools, StartupSec: m.StartupSec, ToolSec: m.ToolSec})
	}
	return t
}

// apply gives the agent's command line the active tools in its CLI's own form (claude's
// --mcp-config and --plugin-dir, codex's -c mcp_servers.<name>.… keys and CODEX_HOME).
// Every agent also finds them in HGATE_MCP_CONFIG (a Claude Code --mcp-config file) and
// HGATE_SKILLS_DIR.
func (act *activation) apply(cli agentcli.CLI, args []string) ([]string, []string) {
	var env []string
	if act.MCPConfig != "" {
		env = append(env, "HGATE_MCP_CONFIG="+act.MCPConfig, "HGATE_MCP_CALLS="+act.Log)
	}
	if act.SkillsDir != "" {
		env = append(env, "HGATE_SKILLS_DIR="+act.SkillsDir)
	}
	out, more := cli.Apply(args, act.tools())
	return out, append(env, more...)
}

// describe lists the active tools as the prompt names them.
func (act *activation) describe() []string {
	var out []string
	for _, m := range act.MCP {
		l := "MCP server `" + m.Name + "`"
		if len(m.Tools) > 0 {
			l += ", tools: " + strings.Join(m.Tools, ", ")
		}
		out = append(out, l)
	}
	for _, s := range act.Skills {
		out = append(out, fmt.Sprintf("skill `%s`: %s (%s)", s.Name, s.Description, s.File))
	}
	return out
}

// reportTools reads the tools each MCP artifact listed in the qualification report the
// registry names, by artifact path; none where the report cannot be read.
func reportTools(root string, reg *harness.Registry) map[string][]string {
	out := map[string][]string{}
	seen := map[string]bool{}
	for _, e := range reg.Artifacts {
		p := e.Report
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		data, _, err := statefile.ReadHead(p, 64<<20) // hgate's report, but in the workspace
		if err != nil {
			continue
		}
		var q qualify.Qualification
		if json.Unmarshal(data, &q) != nil {
			continue
		}
		for _, a := range q.Artifacts {
			if a.Status == "passed" && len(a.Tools) > 0 {
				out[a.Path] = a.Tools
			}
		}
	}
	return out
}

// mcpCallsName is the run's log of the agent's tools/calls, one JSON line each, as the
// proxies in the agent's sandbox wrote them: the agent's side's word, never hgate's.
const mcpCallsName = "mcp_calls.jsonl"
