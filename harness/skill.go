package harness

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/lazyre"
)

// skillFields are the front matter fields of a SKILL.md as Claude Code documents them
// (code.claude.com/docs/en/skills), each with what its value must be. name and
// description are also the Agent Skills standard's, and all codex reads. Built when a
// SKILL.md is checked, not at every start of hgate.
func skillFields() map[string]func(any) string {
	return map[string]func(any) string{
		"name":                     skillName,
		"description":              text(1024),
		"when_to_use":              text(1536),
		"argument-hint":            text(200),
		"arguments":                words,
		"disable-model-invocation": boolean,
		"user-invocable":           boolean,
		"allowed-tools":            words,
		"disallowed-tools":         words,
		"model":                    text(200),
		"effort":                   oneOf("low", "medium", "high", "xhigh", "max"),
		"context":                  oneOf("fork"),
		"agent":                    text(200),
		"hooks":                    mapping,
		"paths":                    words,
		"shell":                    oneOf("bash", "powershell"),
	}
}

// SkillFields lists the front matter fields a SKILL.md may have, sorted.
func SkillFields() []string {
	fields := skillFields()
	out := make([]string, 0, len(fields))
	for k := range fields {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkFrontMatter validates a SKILL.md's front matter field by field and names the first
// bad one (in field order): unknown, of the wrong type, or out of its documented values.
func checkFrontMatter(fm map[string]any) string {
	fields := skillFields()
	for _, k := range slices.Sorted(maps.Keys(fm)) {
		check, ok := fields[k]
		if !ok {
			return fmt.Sprintf("SKILL.md: front matter field %q is not one Claude Code documents (%s)", k, strings.Join(SkillFields(), ", "))
		}
		if why := check(fm[k]); why != "" {
			return fmt.Sprintf("SKILL.md: front matter field %q: %s", k, why)
		}
	}
	return ""
}

var skillNamePattern = lazyre.New(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func skillName(v any) string {
	s, ok := v.(string)
	if !ok {
		return "not text"
	}
	if len(s) > 64 || !skillNamePattern.Get().MatchString(s) {
		return fmt.Sprintf("%q is not a skill name (lowercase letters, digits and single hyphens, at most 64)", s)
	}
	return ""
}

func text(limit int) func(any) string {
	return func(v any) string {
		s, ok := v.(string)
		switch {
		case !ok:
			return "not text"
		case strings.TrimSpace(s) == "":
			return "empty"
		case len(s) > limit:
			return fmt.Sprintf("longer than %d characters", limit)
		}
		return ""
	}
}

// words is a string (space- or comma-separated) or a list of strings.
func words(v any) string {
	switch v := v.(type) {
	case string:
		return ""
	case []any:
		for _, e := range v {
			if _, ok := e.(string); !ok {
				return "a list with an entry that is not text"
			}
		}
		return ""
	}
	return "not text or a list of text"
}

func boolean(v any) string {
	if _, ok := v.(bool); !ok {
		return "not true or false"
	}
	return ""
}

func mapping(v any) string {
	if _, ok := v.(map[string]any); !ok {
		return "not a mapping"
	}
	return ""
}

func oneOf(values ...string) func(any) string {
	return func(v any) string {
		if s, ok := v.(string); ok && slices.Contains(values, s) {
			return ""
		}
		return fmt.Sprintf("%v is not one of %s", v, strings.Join(values, ", "))
	}
}

// CodexSkill is a SKILL.md in codex's form: its front matter reduced to name and
// description, the two fields codex reads (from .agents/skills/<name>/SKILL.md), the body
// unchanged. The source must have passed qualification.
func CodexSkill(data []byte) ([]byte, error) {
	fm, body, err := config.FrontMatterFields(data)
	if err != nil {
		return nil, err
	}
	name, _ := fm["name"].(string)
	desc, _ := fm["description"].(string)
	qn, _ := json.Marshal(name) // a JSON string is a YAML double-quoted scalar
	qd, _ := json.Marshal(desc)
	return append([]byte("---\nname: "+string(qn)+"\ndescription: "+string(qd)+"\n---\n"), body...), nil
}

// WriteCodexSkills writes each skill folder of src (<name>/SKILL.md and its files) into
// dst as codex reads skills (dst/<name>/SKILL.md, as under .agents/skills/): the folder
// copied, its SKILL.md in codex's form (CodexSkill).
func WriteCodexSkills(src, dst string) error {
	return CopyTree(src, dst, func(rel string, data []byte) ([]byte, error) {
		if filepath.Base(rel) != "SKILL.md" || filepath.Dir(filepath.Dir(rel)) != "." {
			return data, nil
		}
		out, err := CodexSkill(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		return out, nil
	})
}

// CopyTree copies a folder's regular files, each with its permission bits (a skill's
// scripts stay executable) and readable by its owner. Symlinks and other special files
// are left out: a link could name anything of the user's. edit, when not nil, gives the
// bytes written for each file (by its path relative to src). It is how an active skill's
// folder reaches a CLI: the one copy for every CLI's form.
func CopyTree(src, dst string, edit func(rel string, data []byte) ([]byte, error)) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil && edit != nil {
			data, err = edit(rel, data)
		}
		if err != nil {
			return err
		}
		return writeNew(to, data, info.Mode().Perm()|0o400)
	})
}

// writeNew creates path (never over an existing file or through a link) with data and perm.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, perm)
}
