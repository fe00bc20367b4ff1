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
	raw, _, err := FrontMatterFields(data)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range raw {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out, nil
}

// FrontMatterFields reads the front matter's top-level keys with their YAML values as
// decoded (string, bool, number, list, mapping), and the body after its closing line.
func FrontMatterFields(data []byte) (map[string]any, []byte, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	rest, ok := bytes.CutPrefix(data, []byte("---\n"))
	if !ok {
		rest, ok = bytes.CutPrefix(data, []byte("---\r\n"))
	}
	if !ok {
		return nil, nil, errors.New("no front matter (expected a first line --- and name: and description: keys)")
	}
	end := bytes.Index(rest, []byte("\n---"))
	if end < 0 {
		return nil, nil, errors.New("front matter does not end (expected a line --- after its keys)")
	}
	var raw map[string]any
	if err := yaml.Unmarshal(rest[:end], &raw); err != nil {
		return nil, nil, fmt.Errorf("front matter: %v", err)
	}
	if raw == nil {
		raw = map[string]any{}
	}
	body := rest[end+len("\n---"):]
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		body = body[i+1:]
	} else {
		body = nil
	}
	return raw, body, nil
}
