package pattern

import "strings"

// wildmatch is git's wildmatch: with pathname set, "*", "?" and brackets do
// not match "/", and "**" between slashes matches any number of directories.
func wildmatch(pat, text string, pathname bool) bool {
	return dowild(pat, 0, text, pathname) == wmMatch
}

const (
	wmNoMatch = iota
	wmMatch
	wmAbortAll
	wmAbortToStarStar
)

// dowild follows git's wildmatch.c; pat[pi:] is the rest of the pattern and
// pat[:pi] is kept to see what precedes a "**".
func dowild(pat string, pi int, text string, pathname bool) int {
	for pi < len(pat) {
		pc := pat[pi]
		if len(text) == 0 && pc != '*' {
			return wmAbortAll
		}
		switch pc {
		case '\\':
			if pi+1 >= len(pat) {
				// A trailing backslash matches nothing.
				return wmNoMatch
			}
			pi++
			if text[0] != pat[pi] {
				return wmNoMatch
			}
		case '?':
			if pathname && text[0] == '/' {
				return wmNoMatch
			}
		case '*':
			matchSlash := !pathname
			star := pi + 1
			for star < len(pat) && pat[star] == '*' {
				star++
			}
			if star-pi >= 2 {
				// "**" only crosses slashes when it is a whole path component.
				prevOK := pi == 0 || pat[pi-1] == '/'
				rest := pat[star:]
				nextOK := rest == "" || rest[0] == '/' || strings.HasPrefix(rest, "\\/")
				if prevOK && nextOK {
					if rest != "" && rest[0] == '/' && dowild(pat, star+1, text, pathname) == wmMatch {
						return wmMatch
					}
					matchSlash = true
				} else {
					matchSlash = !pathname
				}
			}
			pi = star
			if pi == len(pat) {
				if !matchSlash && strings.IndexByte(text, '/') >= 0 {
					return wmNoMatch
				}
				return wmMatch
			}
			if !matchSlash && pat[pi] == '/' {
				i := strings.IndexByte(text, '/')
				if i < 0 {
					return wmNoMatch
				}
				// The slash itself is consumed below.
				text = text[i:]
				break
			}
			for {
				if len(text) == 0 {
					return wmAbortAll
				}
				if !isGlobSpecial(pat[pi]) {
					// Skip ahead to the next occurrence of the literal.
					i := 0
					for i < len(text) && (matchSlash || text[i] != '/') && text[i] != pat[pi] {
						i++
					}
					if i == len(text) || text[i] != pat[pi] {
						return wmNoMatch
					}
					text = text[i:]
				}
				m := dowild(pat, pi, text, pathname)
				if m != wmNoMatch {
					if !matchSlash || m != wmAbortToStarStar {
						return m
					}
				} else if !matchSlash && text[0] == '/' {
					return wmAbortToStarStar
				}
				text = text[1:]
			}
		case '[':
			n, ok, matched := matchBracket(pat[pi:], text[0])
			if !ok {
				return wmAbortAll
			}
			if !matched || (pathname && text[0] == '/') {
				return wmNoMatch
			}
			pi += n
			text = text[1:]
			continue
		default:
			if text[0] != pc {
				return wmNoMatch
			}
		}
		pi++
		text = text[1:]
	}
	if len(text) == 0 {
		return wmMatch
	}
	return wmNoMatch
}

func isGlobSpecial(c byte) bool {
	return c == '*' || c == '?' || c == '[' || c == '\\'
}

// matchBracket matches c against the bracket expression at the start of p;
// it returns the length of the expression and whether it was well formed.
func matchBracket(p string, c byte) (n int, ok, matched bool) {
	i := 1
	negate := false
	if i < len(p) && (p[i] == '!' || p[i] == '^') {
		negate = true
		i++
	}
	var prev byte
	first := true
	for {
		if i >= len(p) {
			return 0, false, false
		}
		pc := p[i]
		if pc == ']' && !first {
			break
		}
		first = false
		switch {
		case pc == '\\':
			i++
			if i >= len(p) {
				return 0, false, false
			}
			pc = p[i]
			if pc == c {
				matched = true
			}
			prev = pc
		case pc == '-' && prev != 0 && i+1 < len(p) && p[i+1] != ']':
			i++
			hi := p[i]
			if hi == '\\' {
				i++
				if i >= len(p) {
					return 0, false, false
				}
				hi = p[i]
			}
			if prev <= c && c <= hi {
				matched = true
			}
			prev = 0
		case pc == '[' && i+1 < len(p) && p[i+1] == ':':
			// As git: the class runs to the first "]", which must follow ":".
			s := i + 2
			j := s
			for j < len(p) && p[j] != ']' {
				j++
			}
			if j >= len(p) {
				return 0, false, false
			}
			if j-s-1 < 0 || p[j-1] != ':' {
				// Not a class: a literal "[".
				if c == '[' {
					matched = true
				}
				prev = pc
				break
			}
			class := p[s : j-1]
			i = j
			in, known := classMatch(class, c)
			if !known {
				return 0, false, false
			}
			if in {
				matched = true
			}
			prev = 0
		default:
			if pc == c {
				matched = true
			}
			prev = pc
		}
		i++
	}
	return i + 1, true, matched != negate
}

// classMatch reports whether c is in the POSIX class (alpha, digit...), with
// git's ctype, which knows ASCII only; known is false for a name git does not
// know, which makes the whole pattern match nothing.
func classMatch(class string, c byte) (in, known bool) {
	isUpper := 'A' <= c && c <= 'Z'
	isLower := 'a' <= c && c <= 'z'
	isDigit := '0' <= c && c <= '9'
	switch class {
	case "alnum":
		return isUpper || isLower || isDigit, true
	case "alpha":
		return isUpper || isLower, true
	case "blank":
		return c == ' ' || c == '\t', true
	case "cntrl":
		return c < 32 || c == 127, true
	case "digit":
		return isDigit, true
	case "graph":
		return c > 32 && c < 127, true
	case "lower":
		return isLower, true
	case "print":
		return c >= 32 && c < 127, true
	case "punct":
		return c > 32 && c < 127 && !isUpper && !isLower && !isDigit, true
	case "space":
		// git's own isspace, not C's: no \v or \f.
		return c == ' ' || c == '\t' || c == '\n' || c == '\r', true
	case "upper":
		return isUpper, true
	case "xdigit":
		return isDigit || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F'), true
	}
	return false, false
}
