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

	"github.com/hgate/hgate/harness"
	"github.com/hgate/hgate/internal/fsafe"
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

// Home implements CLI: CODEX_HOME moves ~/.codex, as codex-cli 0.169.0 to 0.171.0 read
// it. The login is auth.json; config.toml (provider, model) is copied; the user's
// AGENTS.md, prompts and skills are linked; sessions/ is made, so that an activation's
// codex home (Activate) links it and a session outlives its iteration.
func (Codex) Home() Home {
	user, err := userCodexHome()
	if err != nil {
		return Home{}
	}
	h := Home{Var: "CODEX_HOME", From: user, Login: "auth.json", Dirs: []string{"sessions"},
		Copy: []HomeFile{{Name: "config.toml", From: filepath.Join(user, "config.toml")}}}
	for _, n := range []string{"AGENTS.md", "AGENTS.override.md", "prompts", "skills"} {
		h.Link = append(h.Link, HomeFile{Name: n, From: filepath.Join(user, n)})
	}
	return h
}

// codexLogin is codex's auth.json: an API key, a ChatGPT login's tokens, or both.
type codexLogin struct {
	AuthMode *string `json:"auth_mode,omitempty"`
	APIKey   *string `json:"OPENAI_API_KEY"`
	Tokens   *struct {
		IDToken      string  `json:"id_token"`
		AccessToken  string  `json:"access_token"`
		RefreshToken string  `json:"refresh_token"`
		AccountID    *string `json:"account_id"`
	} `json:"tokens"`
	LastRefresh *string `json:"last_refresh"`
}

// Login implements CLI: an API key or tokens with an access and a refresh token; any
// other key (a newer codex's other kinds of login) is not carried.
func (Codex) Login(data []byte) ([]byte, error) {
	var l codexLogin
	out, err := decodeStrict(data, &l)
	if err != nil {
		return nil, err
	}
	if (l.APIKey == nil || *l.APIKey == "") && (l.Tokens == nil || l.Tokens.AccessToken == "" || l.Tokens.RefreshToken == "") {
		return nil, errors.New("neither an OPENAI_API_KEY nor tokens with an access_token and a refresh_token")
	}
	return out, nil
}

// Activate implements CLI: when there are active skills, the codex home codex's runs get.
// codex-cli 0.169.0 reads skills only from its home ($CODEX_HOME/skills), the user's
// ~/.agents/skills and the project's .agents/skills — none of them a place hgate may
// write. So the codex runs get CODEX_HOME = dir/codex-home, which links every entry of
// the run's private codex home (t.CLIHome; the user's without hgate's sandbox: auth.json,
// config.toml, sessions/ — every session stays where codex keeps it) except skills/,
// which links each of the user's skills and holds the active ones in skills/hgate-harness/.
// What codex creates that the home does not hold yet stays there, in the run's folder.
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
	from, list := user, os.ReadDir
	if t.CLIHome != "" {
		// The agent writes the private home: listed by descriptor, no link followed.
		from, list = t.CLIHome, listSafe
	}
	if err := linkEntries(list, from, home, "skills"); err != nil {
		return "", err
	}
	if err := linkEntries(os.ReadDir, filepath.Join(user, "skills"), filepath.Join(home, "skills"), ""); err != nil {
		return "", err
	}
	if err := harness.WriteCodexSkills(t.SkillsDir, filepath.Join(home, "skills", "hgate-harness")); err != nil {
		return "", err
	}
	return home, nil
}

// listSafe lists dir through fsafe.
func listSafe(dir string) ([]os.DirEntry, error) {
	r, err := fsafe.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadDir(".")
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

// linkEntries links each entry of from (but skip), as list lists it, into to; a missing
// from has none.
func linkEntries(list func(string) ([]os.DirEntry, error), from, to, skip string) error {
	ents, err := list(from)
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
	f, err := fsafe.Open(filepath.Join(dir, "config.toml"), 1<<20) // the agent's CLI home: by descriptor
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
