package agentcli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func init() { Register(Codex{}) }

// Codex is codex exec.
type Codex struct{ Base }

// Name implements CLI.
func (Codex) Name() string { return "codex" }

// Args implements CLI. codex exec reads the prompt from stdin when it is "-". Its own
// sandbox stays off (danger-full-access): hgate's is the wall, and codex's cannot start
// inside it (on Linux, codex-cli 0.169.0 runs every command through bubblewrap, which
// cannot write /proc/self/uid_map under Landlock: "bwrap: setting up uid map: Permission
// denied"; its legacy Landlock mode refuses restricted file access without bubblewrap).
// -c sets config.toml keys: mcp_servers.<name>.command/args define a stdio server,
// env_vars passes the socket's variable past codex's environment allowlist for MCP
// servers (codex docs: MCP, config reference). --json streams JSON Lines: thread.started's
// thread_id is the session, turn.completed's usage the tokens, turn.failed the error.
func (Codex) Args() []string {
	return []string{"codex", "exec", "--json", "--sandbox", "danger-full-access",
		"-c", `mcp_servers.hgate.command="hgate"`, "-c", `mcp_servers.hgate.args=["mcp"]`,
		"-c", `mcp_servers.hgate.env_vars=["HGATE_LOOP_SOCKET"]`, "-"}
}

// Unsandboxed implements CLI: without hgate's sandbox (--no-sandbox) codex gets its own
// back (workspace-write), since danger-full-access is only safe inside hgate's walls.
func (Codex) Unsandboxed(args []string) []string {
	out := slices.Clone(args)
	for i := 0; i+1 < len(out); i++ {
		if out[i] == "--sandbox" && out[i+1] == "danger-full-access" {
			out[i+1] = "workspace-write"
		}
	}
	return out
}

// Resume implements CLI: codex's exec [options] resume <id> - (exec's options stay
// before the subcommand, which does not take --sandbox).
func (Codex) Resume(args []string, id string) ([]string, bool) {
	if i := slices.Index(args, "-"); i > 0 && id != "" && args[1] == "exec" {
		return slices.Insert(slices.Clone(args), i, "resume", id), true
	}
	return args, false
}

// Apply implements CLI: each active server as -c mcp_servers.<name>.… keys, and the
// activation's codex home as CODEX_HOME.
func (Codex) Apply(args []string, t Tools) ([]string, []string) {
	if len(args) < 2 || args[1] != "exec" {
		return args, nil
	}
	var kv []string
	for _, m := range t.MCP {
		key := "mcp_servers." + m.Name + "."
		kv = append(kv, "-c", key+"command="+tomlValue(m.Command), "-c", key+"args="+tomlValue(m.Args),
			"-c", key+"startup_timeout_sec="+strconv.Itoa(m.StartupSec), "-c", key+"tool_timeout_sec="+strconv.Itoa(m.ToolSec+5))
		if len(m.EnabledTools) > 0 {
			kv = append(kv, "-c", key+"enabled_tools="+tomlValue(m.EnabledTools))
		}
	}
	out := slices.Insert(slices.Clone(args), 2, kv...)
	var env []string
	if t.Home != "" {
		env = append(env, "CODEX_HOME="+t.Home)
	}
	return out, env
}

// tomlValue writes a string or a list of strings as TOML: JSON's strings and arrays of
// strings are TOML's too (HTML escaping off, which TOML would not read as JSON does).
func tomlValue(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(b.String())
}

// Writable implements CLI: as codex-cli 0.169.0 writes it (codex cannot start without
// ~/.codex, which the sandbox creates first); CODEX_HOME moves it, as it moves it for
// codex.
func (Codex) Writable() []string {
	if dir := os.Getenv("CODEX_HOME"); dir != "" {
		return []string{dir + "/"}
	}
	return []string{"~/.codex/"}
}

// Activate implements CLI: when there are active skills, the codex home codex's runs get.
// codex-cli 0.169.0 reads skills only from its home ($CODEX_HOME/skills), the user's
// ~/.agents/skills and the project's .agents/skills — none of them a place hgate may
// write. So the codex runs get CODEX_HOME = dir/codex-home, which links every entry of
// the user's codex home (auth.json: the login; config.toml; sessions/: every session
// stays where codex keeps it) except skills/, which links each of the user's skills and
// holds the active ones in skills/hgate-harness/. What codex creates that the user's home
// does not hold yet stays there, in the run's folder.
func (Codex) Activate(dir string, t Tools) (string, error) {
	if t.SkillsDir == "" {
		return "", nil
	}
	user, err := userCodexHome()
	if err != nil {
		return "", err
	}
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(filepath.Join(home, "skills"), 0o700); err != nil {
		return "", err
	}
	if err := linkEntries(user, home, "skills"); err != nil {
		return "", err
	}
	if err := linkEntries(filepath.Join(user, "skills"), filepath.Join(home, "skills"), ""); err != nil {
		return "", err
	}
	if err := CopyTree(t.SkillsDir, filepath.Join(home, "skills", "hgate-harness")); err != nil {
		return "", err
	}
	return home, nil
}

// userCodexHome is the user's codex home, absolute: $CODEX_HOME, else ~/.codex.
func userCodexHome() (string, error) {
	user := os.Getenv("CODEX_HOME")
	if user == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		user = filepath.Join(home, ".codex")
	}
	return filepath.Abs(user)
}

// linkEntries links each entry of from (but skip) into to; a missing from has none.
func linkEntries(from, to, skip string) error {
	ents, err := os.ReadDir(from)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range ents {
		if e.Name() == skip {
			continue
		}
		if err := os.Symlink(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// ConfigModel implements CLI: the top-level model key of codex's config.toml
// ($CODEX_HOME, else ~/.codex), the model codex exec runs when its command line names
// none.
func (Codex) ConfigModel() string {
	dir := os.Getenv("CODEX_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".codex")
	}
	f, err := os.Open(filepath.Join(dir, "config.toml"))
	if err != nil {
		return ""
	}
	defer f.Close()
	modelRE := regexp.MustCompile(`^model\s*=\s*["']([^"']+)["']`)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			return "" // a table: past the top-level keys
		}
		if m := modelRE.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	return ""
}
