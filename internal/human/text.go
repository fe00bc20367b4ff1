package human

import (
	"fmt"
	"strings"
	"unicode"
)

// Printable is text someone else wrote (the agent's commit message, the line it printed
// last, its notes, a file name it chose) as hgate shows and records it: a control
// character (an escape sequence that clears the user's terminal or redraws a line, a
// carriage return, a bidirectional override) is written out as \xNN or \uNNNN, so the
// text shows as it was written and never as hgate's own lines. Tabs stay, and newlines
// where keepNewlines says so.
func Printable(s string, keepNewlines bool) string {
	if !strings.ContainsFunc(s, unsafeRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' && keepNewlines, !unsafeRune(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// unsafeRune is a character a terminal or an editor acts on rather than shows.
func unsafeRune(r rune) bool {
	if r == '\t' {
		return false
	}
	return unicode.IsControl(r) || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}
