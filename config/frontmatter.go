package config

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// FrontMatter reads the YAML front matter of a Markdown file (a SKILL.md): the mapping
// between a first line "---" and the next "---" line. Only its top-level keys with text
// values are returned; this package owns yaml, so other packages ask here.
func FrontMatter(data []byte) (map[string]string, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	if !ok {
		rest, ok = bytes.CutPrefix(data, []byte("---\r\n"))
	}
	if !ok {
		return nil, errors.New("no front matter (expected a first line --- and name: and description: keys)")
	}
	end := bytes.Index(rest, []byte("\n---"))
	if end < 0 {
		return nil, errors.New("front matter does not end (expected a line --- after its keys)")
	}
	var raw map[string]any
	if err := yaml.Unmarshal(rest[:end], &raw); err != nil {
		return nil, fmt.Errorf("front matter: %v", err)
	}
	out := map[string]string{}
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out, nil
}
