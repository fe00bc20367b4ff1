// Package gitconfig reads git's config files as git-config(1) defines them,
// without go-git's reader (whose gcfg dependency links encoding/gob and
// go-git's URL regexps into every hgate start). It only reads: sections,
// "quoted" subsections and the old [section.sub] form, case-insensitive
// section and key names, values with quotes, escapes, comments and
// backslash-newline continuations. include and includeIf are read as plain
// keys and never followed: hgate reads no file a config names.
package gitconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// Entry is one key of a config file as `git config --list` names it:
// Name is "section.key" or "section.subsection.key", section and key in lower
// case, the subsection as written. NoValue marks a key given without "="
// (git's implicit true), whose Value is "".
type Entry struct {
	Name    string
	Value   string
	NoValue bool
}

// Config is the entries of one file in file order.
type Config struct{ Entries []Entry }

// ReadFile parses the config file at path; a missing file is an empty
// config.
func ReadFile(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read git config %s: %w", path, err)
	}
	c, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("read git config %s: %w", path, err)
	}
	return c, nil
}

// Get returns the last value of key name ("core.hooksPath": section and key
// in any case), as git does for a single-valued key.
func (c *Config) Get(name string) (string, bool) {
	all := c.GetAll(name)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// GetAll returns every value of key name, in file order.
func (c *Config) GetAll(name string) []string {
	if c == nil {
		return nil
	}
	want := Canonical(name)
	var out []string
	for _, e := range c.Entries {
		if e.Name == want {
			out = append(out, e.Value)
		}
	}
	return out
}

// Canonical lower-cases the section and the key of a dotted name, keeping
// the subsection between them as it is.
func Canonical(name string) string {
	first := strings.IndexByte(name, '.')
	last := strings.LastIndexByte(name, '.')
	if first < 0 {
		return strings.ToLower(name)
	}
	return strings.ToLower(name[:first]) + name[first:last] + strings.ToLower(name[last:])
}
