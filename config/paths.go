package config

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Checks of the paths and patterns hgate.yaml names: relative to the repository root,
// clean, and never leaving it.

// checkSandboxPath returns what is wrong with a loop.sandbox path, or "": it is
// absolute, starts with ~/ (the home folder), or is relative to the repository
// root without leaving it.
func checkSandboxPath(s string) string {
	switch {
	case strings.TrimSpace(s) == "":
		return "empty (expected a path such as ~/.claude or /data/test)"
	case s == "~" || strings.HasPrefix(s, "~/") || path.IsAbs(s):
		return ""
	case strings.HasPrefix(s, "~"):
		return fmt.Sprintf("%q names another user's home folder (expected ~/ for yours, or an absolute path)", s)
	case path.Clean(s) == "." || path.Clean(s) == ".." || strings.HasPrefix(path.Clean(s), "../"):
		return fmt.Sprintf("%q is not inside the repository (expected a path below the repository root, ~/..., or an absolute path)", s)
	}
	return ""
}

// patternList decodes a list of gitignore-style patterns, "!" allowed (allow, ignore).
func (d *decoder) patternList(n *yaml.Node, p, expected string) ([]string, bool) {
	list, ok := d.textList(n, p, expected)
	if !ok {
		return nil, false
	}
	for i, s := range list {
		if msg := d.checkPattern(s, true); msg != "" {
			d.failf(resolve(n).Content[i], fmt.Sprintf("%s[%d]", p, i), "%s", msg)
		}
	}
	return list, true
}

// checkPattern returns what is wrong with a gitignore-style pattern relative to
// the repository root, or "". A leading "/" is refused: in hgate.yaml it reads as
// an absolute path far more often than as gitignore's anchor, and a pattern with
// a slash inside is anchored to the root anyway.
func (d *decoder) checkPattern(s string, negatable bool) string {
	body := s
	if negatable {
		body = strings.TrimPrefix(body, "!")
	}
	if msg := d.checkPathText(s, body, "a path pattern, e.g. agent/*.py", "one pattern"); msg != "" {
		return msg
	}
	if strings.HasPrefix(body, "#") {
		return fmt.Sprintf("%q starts with #, which gitignore reads as a comment (expected \\# for a literal #)", s)
	}
	if msg := checkComponents(s, strings.TrimSuffix(body, "/")); msg != "" {
		return msg
	}
	if _, err := path.Match(body, ""); err != nil {
		return fmt.Sprintf("%q is not a valid pattern: an unclosed [ or a trailing \\ (expected e.g. src/*.py)", s)
	}
	return ""
}

// checkRelPath returns what is wrong with a file path relative to the repository
// root, or "".
func (d *decoder) checkRelPath(s string) string {
	if msg := d.checkPathText(s, s, "a path relative to the repository root", "a file name"); msg != "" {
		return msg
	}
	return checkComponents(s, s)
}

// checkPathText returns what is wrong with the text of a path or pattern (orig, body
// without a leading "!"), or "": empty, a control character, absolute. empty and one say
// what was expected.
func (d *decoder) checkPathText(orig, body, empty, one string) string {
	switch {
	case strings.TrimSpace(body) == "":
		return "empty (expected " + empty + ")"
	case hasControl(orig):
		return fmt.Sprintf("%q holds a control character such as a line break (expected %s)", orig, one)
	case isAbs(body):
		return d.absolute(orig, body)
	}
	return ""
}

func checkComponents(orig, body string) string {
	for _, c := range strings.Split(body, "/") {
		if c == ".." {
			return fmt.Sprintf("%q leaves the repository (expected a path inside it, without \"..\")", orig)
		}
	}
	for _, c := range strings.Split(body, "/") {
		if c == "." || c == "" {
			return fmt.Sprintf("%q is not a clean path (expected %q)", orig, cleanSuggestion(orig))
		}
	}
	return ""
}

func cleanSuggestion(s string) string {
	neg := strings.HasPrefix(s, "!")
	c := path.Clean(strings.TrimPrefix(s, "!"))
	if strings.HasSuffix(s, "/") && c != "." {
		c += "/"
	}
	if neg {
		c = "!" + c
	}
	return c
}

// absolute describes an absolute path; when it points into the repository the
// message shows the relative spelling.
func (d *decoder) absolute(orig, p string) string {
	root := strings.TrimSuffix(filepath.ToSlash(d.dir), "/") + "/"
	if d.dir != "" && strings.HasPrefix(p, root) && len(p) > len(root) {
		rel := p[len(root):]
		if strings.HasPrefix(orig, "!") {
			rel = "!" + rel
		}
		return fmt.Sprintf("%q is an absolute path (expected it relative to the repository root: %q)", orig, rel)
	}
	return fmt.Sprintf("%q is an absolute path (expected a path relative to the repository root, e.g. agent/agent.py)", orig)
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}

// isAbs reports a Unix absolute path or a Windows drive path.
func isAbs(s string) bool {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "/") {
		return true
	}
	return len(s) >= 3 && s[1] == ':' && (s[2] == '/' || s[2] == '\\') &&
		(s[0]|0x20 >= 'a' && s[0]|0x20 <= 'z')
}
