package pattern

import "strings"

// Matcher matches slash paths against gitignore-style patterns such as
// "agent/agent.py", "agent/", "*.md", "src/**/x.go" and "!agent/secret.py".
//
// Unlike a .gitignore, a pattern also matches everything below a directory it
// matches, and a later negation can carve a path back out of an earlier
// directory pattern: the last pattern matching the path or one of its parent
// directories decides.
type Matcher struct {
	list List
}

// NewMatcher compiles patterns; blank lines and "#" comments are skipped.
func NewMatcher(patterns []string) *Matcher {
	m := &Matcher{}
	for i, s := range patterns {
		if p, ok := parseRule(s, "", i+1, ""); ok {
			m.list = append(m.list, p)
		}
	}
	return m
}

// Match reports whether path (slash separated, relative to the repository
// root) is matched; isDir says whether path itself is a directory.
func (m *Matcher) Match(path string, isDir bool) bool {
	if m == nil || len(m.list) == 0 {
		return false
	}
	path = strings.Trim(path, "/")
	for i := len(m.list) - 1; i >= 0; i-- {
		p := &m.list[i]
		if p.matchSelfOrParent(path, isDir) {
			return !p.Negate
		}
	}
	return false
}

// matchSelfOrParent matches path, or any of its parent directories.
func (p *Rule) matchSelfOrParent(path string, isDir bool) bool {
	if (!p.dirOnly || isDir) && p.match(path) {
		return true
	}
	for i := strings.LastIndexByte(path, '/'); i > 0; i = strings.LastIndexByte(path[:i], '/') {
		if p.match(path[:i]) {
			return true
		}
	}
	return false
}
