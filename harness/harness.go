// Package harness reads the tools an agent builds for itself (HarnessGym's artifacts) from
// the harness folder: skills (skills/<name>/SKILL.md with name and description in its
// front matter) and MCP servers (mcp/<name>/mcp.json, or HarnessGym's server.json or
// harnessgym-mcp.json, in that order). A manifest in HarnessGym's forms reads unchanged:
// its timeouts under any of their names, self_test as true, a list, a string or an object.
// Nothing here runs anything; package qualify does, in the clean room's sandbox.
package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/fsafe"
	"github.com/hgate/hgate/internal/lazyre"
)

// Kinds of artifact.
const (
	KindSkill = "skill"
	KindMCP   = "mcp"
)

// Default timeouts of an MCP server's checks, as HarnessGym's.
const (
	DefaultStartup  = 10 * time.Second
	DefaultTool     = 60 * time.Second
	DefaultSelfTest = 20 * time.Second
)

// manifestNames are an MCP server's manifest file names, in the order they are tried.
var manifestNames = []string{"mcp.json", "server.json", "harnessgym-mcp.json"}

// Artifact is one tool the agent built.
type Artifact struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Path is the artifact's folder, slash-separated, relative to the harness folder.
	Path string `json:"path"`
	// Problem is why the artifact cannot be used as it is (a manifest that does not
	// parse, a SKILL.md without description); "" when it reads.
	Problem string `json:"problem,omitempty"`
	Skill   *Skill `json:"skill,omitempty"`
	MCP     *MCP   `json:"mcp,omitempty"`
}

// Skill is a SKILL.md's front matter.
type Skill struct {
	Description string `json:"description"`
}

// MCP is a normalized MCP server manifest.
type MCP struct {
	Manifest string   `json:"manifest"` // file name read
	Name     string   `json:"-"`        // the manifest's own name, if it has one
	Command  string   `json:"command"`
	Args     []string `json:"args"`
	// Cwd is slash-separated, relative to the repository root ("" = the root).
	Cwd          string        `json:"cwd"`
	EnabledTools []string      `json:"enabled_tools"`
	SelfTest     []string      `json:"self_test"` // nil: none configured
	Startup      time.Duration `json:"-"`
	Tool         time.Duration `json:"-"`
	SelfTestTime time.Duration `json:"-"`
}

// Load reads every artifact in dir (the harness folder), sorted by kind and name. A
// folder that is not there holds no artifact. Only the folder's own problems (it cannot
// be listed) are errors; an artifact that does not read carries its Problem.
func Load(dir string) ([]Artifact, error) {
	root, err := fsafe.OpenRoot(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("harness: %w", err)
	}
	defer root.Close()
	var out []Artifact
	for _, kind := range []string{KindMCP, KindSkill} {
		sub := map[string]string{KindMCP: "mcp", KindSkill: "skills"}[kind]
		// The agent wrote the folder: listed by descriptor, and a link at mcp/ or skills/
		// is never followed (it holds no artifact).
		entries, err := root.ReadDir(sub)
		if os.IsNotExist(err) || errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("harness: %w", err)
		}
		for _, e := range entries {
			if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			a := Artifact{Kind: kind, Name: sanitize(e.Name()), Path: path.Join(sub, e.Name())}
			if kind == KindSkill {
				a.Skill, a.Problem = readSkill(root, a.Path)
			} else {
				a.MCP, a.Problem = readMCP(root, a.Path)
				if a.MCP != nil && a.MCP.Name != "" {
					a.Name = sanitize(a.MCP.Name)
				}
			}
			out = append(out, a)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Path < out[j].Path
	})
	// Two servers of one name would be one server to the agent: the first keeps it.
	first := map[string]string{}
	for i, a := range out {
		key := a.Kind + "/" + a.Name
		if p, dup := first[key]; dup && a.Problem == "" {
			out[i].Problem = fmt.Sprintf("the name %s is %s's already", a.Name, p)
		} else if !dup {
			first[key] = a.Path
		}
	}
	return out, nil
}

var unsafeName = lazyre.New(`[^A-Za-z0-9_-]`)

// sanitize makes a folder name a tool name as HarnessGym does.
func sanitize(name string) string {
	if s := unsafeName.Get().ReplaceAllString(name, "_"); s != "" {
		return s
	}
	return "harness_mcp"
}

// readSkill checks a skill folder's SKILL.md: both front-matter fields present.
func readSkill(root *fsafe.Root, folder string) (*Skill, string) {
	data, err := readSmall(root, path.Join(folder, "SKILL.md"))
	if err != nil {
		return nil, err.Error()
	}
	fm, _, err := config.FrontMatterFields(data)
	if err != nil {
		return nil, "SKILL.md: " + err.Error()
	}
	var missing []string
	for _, k := range []string{"name", "description"} {
		if s, _ := fm[k].(string); strings.TrimSpace(s) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Sprintf("SKILL.md: front matter has no %s (expected name: and description:)", strings.Join(missing, " and "))
	}
	if problem := checkFrontMatter(fm); problem != "" {
		return nil, problem
	}
	desc, _ := fm["description"].(string)
	return &Skill{Description: desc}, ""
}

// maxManifest bounds what is read of a file the agent wrote.
const maxManifest = 1 << 20

// readSmall reads the file p (slash-separated) under the harness folder root: the agent
// wrote it, so by descriptor, with no link followed at any component.
func readSmall(root *fsafe.Root, p string) ([]byte, error) {
	f, err := root.Open(p, -1)
	switch {
	case os.IsNotExist(err):
		return nil, fmt.Errorf("%s is missing", path.Base(p))
	case errors.Is(err, fsafe.ErrNotRegular):
		return nil, fmt.Errorf("%s is not a regular file", path.Base(p))
	case err != nil:
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path.Base(p))
	}
	if st.Size() > maxManifest {
		return nil, fmt.Errorf("%s is larger than %d bytes", path.Base(p), maxManifest)
	}
	return io.ReadAll(io.LimitReader(f, maxManifest))
}

// readMCP reads and normalizes an MCP server's manifest.
func readMCP(root *fsafe.Root, folder string) (*MCP, string) {
	for _, name := range manifestNames {
		data, err := readSmall(root, path.Join(folder, name))
		if err != nil {
			if strings.HasSuffix(err.Error(), " is missing") {
				continue
			}
			return nil, err.Error()
		}
		m, problem := parseManifest(data)
		if m != nil {
			m.Manifest = name
		}
		if problem != "" {
			problem = name + ": " + problem
		}
		return m, problem
	}
	return nil, "no manifest (expected mcp.json, server.json or harnessgym-mcp.json)"
}
