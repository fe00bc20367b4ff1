// Package agentcli holds one adapter per agent command-line tool the loop drives (claude,
// codex, aider, and a custom command for anything else). An adapter is everything the loop
// must know of one CLI: its command line and how it resumes a session, how it is given
// the tools hgate qualified, the environment and home files it needs, the folders its
// sandbox must open, and how its output is read. The loop never names a CLI: it asks
// For(loop.agent) for the adapter and drives that, so adding an agent is one new file
// that registers its adapter.
package agentcli

import (
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/hgate/hgate/agentout"
)

// CLI is one agent command-line tool. Embed Base for the answers of a CLI that needs
// nothing special.
type CLI interface {
	// Name is the one word loop.agent names it by ("" for a custom command).
	Name() string
	// Args is its command line; {prompt_file} stands for the prompt's path.
	Args() []string
	// Unsandboxed is the command line for a run without hgate's sandbox (--no-sandbox).
	Unsandboxed(args []string) []string
	// Resume is the command line continuing session id (never "") with the next prompt;
	// ok is false
	// when the CLI cannot be resumed by hgate (the agent gets the id in
	// HGATE_RESUME_SESSION instead).
	Resume(args []string, id string) (out []string, ok bool)
	// Activate prepares, in the iteration's activation folder dir, what the CLI needs
	// beyond t's common files to find the active tools. It returns a folder its runs get
	// as their own home ("" = none), which their sandbox lets them write.
	Activate(dir string, t Tools) (home string, err error)
	// Apply gives the command line the active tools in the CLI's own form, and the
	// environment that goes with them.
	Apply(args []string, t Tools) ([]string, []string)
	// Env is the environment the CLI needs besides hgate's; sandboxed says whether it
	// runs in hgate's sandbox, tmp is its private TMPDIR.
	Env(sandboxed bool, tmp string) []string
	// Writable are the folders (ending in /) and files the CLI writes outside its Home
	// (~ for the home folder): its sandbox opens them.
	Writable() []string
	// Home is the CLI's own home (settings, login, sessions): a sandboxed run gets a
	// private one the loop makes from it, never the user's (Var "" = none: the CLI keeps
	// nothing hgate moves).
	Home() Home
	// Login checks data as the CLI's login file (Home.Login): it returns it re-encoded
	// when it has the CLI's credentials shape, no unknown keys and values of the expected
	// types, else an error saying why.
	Login(data []byte) ([]byte, error)
	// FileStart is what one of its Writable files starts as when it is missing.
	FileStart(path string) (content string, ok bool)
	// ConfigModel is the model the CLI's own configuration names, which it runs when its
	// command line names none ("" = none or unknown).
	ConfigModel() string
	// Parse reads what the CLI printed about its run (session, spend, did it work).
	Parse(r io.Reader) (agentout.Run, error)
}

// Tools are the tools an iteration activates, in the forms every CLI may be given.
type Tools struct {
	MCP []MCPServer
	// MCPConfig is a Claude Code --mcp-config file of the servers ("" = none); PluginDir
	// a Claude Code plugin holding the skills ("" = none).
	MCPConfig string
	PluginDir string
	// SkillsDir holds a copy of each active skill's folder ("" = none).
	SkillsDir string
	// Home is the folder Activate returned ("" = none).
	Home string
	// CLIHome is the run's private home of the CLI that Activate builds on ("" = the
	// user's: the agent runs without hgate's sandbox).
	CLIHome string
}

// MCPServer is one active MCP server as the CLI starts it (behind hgate's proxy when
// it is installed).
type MCPServer struct {
	Name         string
	Command      string
	Args         []string
	EnabledTools []string
	StartupSec   int
	ToolSec      int
}

// Base answers every question of CLI but Name and Args as a CLI that needs nothing
// special would: no resume, no adjustments, agentout's parsers.
type Base struct{}

func (Base) Unsandboxed(args []string) []string                { return args }
func (Base) Resume(args []string, id string) ([]string, bool)  { return args, false }
func (Base) Activate(dir string, t Tools) (string, error)      { return "", nil }
func (Base) Apply(args []string, t Tools) ([]string, []string) { return args, nil }
func (Base) Env(sandboxed bool, tmp string) []string           { return nil }
func (Base) Writable() []string                                { return nil }
func (Base) Home() Home                                        { return Home{} }
func (Base) Login(data []byte) ([]byte, error)                 { return nil, errNoLogin }
func (Base) FileStart(path string) (string, bool)              { return "", false }
func (Base) ConfigModel() string                               { return "" }
func (Base) Parse(r io.Reader) (agentout.Run, error)           { return agentout.Parse(r) }

var (
	mu       sync.RWMutex
	registry = map[string]CLI{}
)

// Register makes c the adapter of the one-word agent c.Name(). A second adapter of the
// same name replaces the first (a test may stand in for a CLI).
func Register(c CLI) {
	mu.Lock()
	defer mu.Unlock()
	registry[c.Name()] = c
}

// Lookup is the adapter registered under name.
func Lookup(name string) (CLI, bool) {
	mu.RLock()
	defer mu.RUnlock()
	c, ok := registry[name]
	return c, ok
}

// Names are the registered one-word agents, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	return sortedNames()
}

// For is the adapter of a configured agent: a registered one-word name, else a custom
// command (one string, run by sh -c when it holds a space or tab, or an argument vector).
func For(agent []string) CLI {
	if len(agent) == 1 {
		if c, ok := Lookup(strings.TrimSpace(agent[0])); ok {
			return c
		}
		if strings.ContainsAny(agent[0], " \t") {
			return Custom{Argv: []string{"sh", "-c", agent[0]}}
		}
	}
	return Custom{Argv: agent}
}

// Command is c's command line with {prompt_file} replaced by the prompt's path in every
// argument.
func Command(c CLI, promptFile string) []string {
	args := c.Args()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, "{prompt_file}", promptFile)
	}
	return out
}

// Resume is c's command line continuing session id, when there is one and c can resume
// it; else args as they are and false.
func Resume(c CLI, args []string, id string) ([]string, bool) {
	if id == "" {
		return args, false
	}
	return c.Resume(args, id)
}

// FileStart is what a missing file of any registered CLI's home files starts as, so a
// loop.sandbox.writable entry naming one starts as its CLI needs it too.
func FileStart(path string) (string, bool) {
	mu.RLock()
	defer mu.RUnlock()
	for _, n := range sortedNames() {
		if s, ok := registry[n].FileStart(path); ok {
			return s, true
		}
	}
	return "", false
}

// ConfigModel is the model the configuration of the first CLI a command line's words
// name (by their base name) runs when the command line names none; "" when none says.
func ConfigModel(words []string) string {
	for _, w := range words {
		if c, ok := Lookup(filepath.Base(w)); ok {
			if m := c.ConfigModel(); m != "" {
				return m
			}
		}
	}
	return ""
}

// sortedNames: mu is held.
func sortedNames() []string {
	var out []string
	for n := range registry {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TranscriptName is the file in its private TMPDIR where a CLI that keeps a transcript
// of its own is told to keep it: the loop keeps it in the iteration's folder.
const TranscriptName = "aider.chat.history.md"

// Routed is a CLI that hgate's model gateway can stand between and its model provider
// (claude, codex). A CLI that is not Routed (aider, a custom command) talks to its
// provider itself, and its spend is its own word.
type Routed interface {
	// Upstream is where the CLI would send its model requests, read from the
	// environment and its own configuration; ok is false when the gateway cannot stand
	// in its way (a cloud or a login it cannot forward), Why then saying so.
	Upstream() (u Upstream, ok bool)
	// Route points the CLI's command line and environment at the gateway, as via says.
	Route(args []string, via Via) ([]string, []string)
}

// Via is how a session reaches its model through the gateway.
type Via struct {
	// Base is the gateway's URL of the session's scope (http://127.0.0.1:<port>/s/<token>).
	Base string
	// Held says the gateway holds the provider's key: the CLI gets a placeholder
	// (KeyPlaceholder) in its place.
	Held bool
	// NoWebTools says the gateway refuses the provider's server-side web tools
	// (loop.sandbox.network: model or hosts): a CLI that asks for them in every request
	// must be told not to, or every request is refused.
	NoWebTools bool
}

// Upstream is a model provider the gateway forwards to.
type Upstream struct {
	API string // "anthropic" or "openai"
	URL string // its base URL; "" for the provider's own
	Key string // the API key the CLI would send; "" passes the CLI's login through
	// KeyEnv is the variable Key is read from: while the gateway holds the key, the
	// agent's environment has the placeholder there.
	KeyEnv string
	Why    string // when not routed: why
}

// KeyPlaceholder is what a routed CLI's key variable holds while the gateway holds the
// key: a word that is no key anywhere.
const KeyPlaceholder = "hgate-gateway-holds-the-key"
