// Package pattern compiles and matches gitignore-style patterns: the lines of
// .gitignore files, which must decide exactly as git does, and hgate.yaml's
// allow list, the boundary of what the agent may change (Matcher).
//
// FuzzMatchVsGit checks both against git check-ignore.
package pattern

import (
	"strings"
)

// Rule is one gitignore-style line, compiled.
type Rule struct {
	Line   string // the original line, for messages
	Source string // file the line came from, for messages ("" for config patterns)
	LineNo int
	Negate bool // the line starts with "!": a match un-ignores

	text     string // the glob, without the leading "!" and trailing "/"
	dirOnly  bool
	pathname bool   // contains a slash: matched against the path relative to base
	base     string // directory of the ignore file, "" or "dir/"
	literal  bool   // no glob characters: compare strings
	suffix   string // set when the glob is "*" followed by a literal: a fast path for "*.md"
	prefix   int    // length of the literal start, before the first glob character (-1: none)
}

// parseRule compiles one line as git does for .gitignore files; ok is
// false for blank lines and comments.
func parseRule(line, source string, lineNo int, base string) (Rule, bool) {
	orig := line
	line = strings.TrimSuffix(line, "\r")
	if i := strings.IndexByte(line, 0); i >= 0 {
		line = line[:i] // git reads the line as a C string
	}
	line = trimTrailingSpaces(line)
	if line == "" || line[0] == '#' {
		return Rule{}, false
	}
	p := Rule{Line: orig, Source: source, LineNo: lineNo, base: base}
	if line[0] == '!' {
		p.Negate = true
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		// One slash only, as git: "a//" is the pattern "a/", which no path matches.
		p.dirOnly = true
		line = line[:len(line)-1]
	}
	if line == "" {
		return Rule{}, false
	}
	if strings.Contains(line, "/") {
		p.pathname = true
		line = strings.TrimPrefix(line, "/")
	}
	p.text = line
	// A backslash is a glob character, so a literal or a suffix holds none
	// to unescape.
	p.prefix = strings.IndexAny(line, globChars)
	p.literal = p.prefix < 0
	if len(line) > 1 && line[0] == '*' && !hasGlob(line[1:]) {
		p.suffix = line[1:]
	}
	return p, true
}

// trimTrailingSpaces drops unescaped trailing spaces, as git does: reading
// from the start, a backslash escapes the next character, so in `x\\ ` the
// space is not escaped.
func trimTrailingSpaces(s string) string {
	lastSpace := -1 // start of the run of unescaped spaces at the end
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ':
			if lastSpace < 0 {
				lastSpace = i
			}
		case '\\':
			i++
			lastSpace = -1
		default:
			lastSpace = -1
		}
	}
	if lastSpace >= 0 {
		return s[:lastSpace]
	}
	return s
}

// globChars are git's glob special characters.
const globChars = "*?[\\"

func hasGlob(s string) bool {
	return strings.ContainsAny(s, globChars)
}

// match reports whether p matches path (relative to the repository root).
// The caller checks p.dirOnly against isDir.
func (p *Rule) match(path string) bool {
	if p.base != "" {
		if !strings.HasPrefix(path, p.base) {
			return false
		}
		path = path[len(p.base):]
	}
	if !p.pathname {
		name := path
		if i := strings.LastIndexByte(path, '/'); i >= 0 {
			name = path[i+1:]
		}
		switch {
		case p.literal:
			return name == p.text
		case p.suffix != "":
			return strings.HasSuffix(name, p.suffix)
		}
		return wildmatch(p.text, name, false)
	}
	if p.literal {
		return path == p.text
	}
	// As git's match_pathname: the literal start is compared first and the
	// rest matched as a pattern of its own, so a "**" right after the literal
	// start counts as a whole component ("a**/b" matches "a/x/b").
	if !strings.HasPrefix(path, p.text[:p.prefix]) {
		return false
	}
	return wildmatch(p.text[p.prefix:], path[p.prefix:], true)
}

// List is the lines of one ignore source; the last match wins.
type List []Rule

// Parse compiles the lines of an ignore file found in directory base ("" or
// "dir/"); source names it in messages.
func Parse(data, source, base string) List {
	var l List
	data = strings.TrimPrefix(data, "\ufeff") // git skips a UTF-8 byte order mark
	for i, line := range strings.Split(data, "\n") {
		if p, ok := parseRule(line, source, i+1, base); ok {
			l = append(l, p)
		}
	}
	return l
}

// Decide returns the last rule matching path, or nil. As in git, the rules do
// not look at path's parent directories: the caller walks them first.
func (l List) Decide(path string, isDir bool) *Rule {
	for i := len(l) - 1; i >= 0; i-- {
		p := &l[i]
		if p.dirOnly && !isDir {
			continue
		}
		if p.match(path) {
			return p
		}
	}
	return nil
}
