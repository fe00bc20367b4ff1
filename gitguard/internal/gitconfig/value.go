package gitconfig

import (
	"fmt"
	"strings"
)

// value reads a value up to the end of its line, as git's parse_value:
// whitespace outside quotes is dropped at either end and each inner
// whitespace character becomes one space; '#' and ';' outside quotes start a
// comment; quotes are removed; \n \t \b \\ \" are escapes and a backslash at
// the end of a line continues the value on the next. Any other escape, or a
// line ending inside quotes, is an error.
func (s *scanner) value() (string, error) {
	var b strings.Builder
	quote, comment, spaces := false, false, 0
	for {
		c := s.next()
		switch {
		case c == '\n' && quote:
			return "", fmt.Errorf("%w: unterminated quote", errBad)
		case c == '\n':
			return b.String(), nil
		case comment:
			continue
		case isSpace(c) && !quote:
			if b.Len() > 0 {
				spaces++
			}
			continue
		case !quote && (c == ';' || c == '#'):
			comment = true
			continue
		}
		b.WriteString(strings.Repeat(" ", spaces))
		spaces = 0
		if err := s.valueChar(c, &b, &quote); err != nil {
			return "", err
		}
	}
}

// valueChar adds c to a value: an escape, a quote that opens or closes, or
// itself.
func (s *scanner) valueChar(c byte, b *strings.Builder, quote *bool) error {
	switch c {
	case '\\':
		e, cont, err := s.escape()
		if err != nil {
			return err
		}
		if !cont {
			b.WriteByte(e)
		}
	case '"':
		*quote = !*quote
	default:
		b.WriteByte(c)
	}
	return nil
}

// escape reads the character after a backslash in a value; cont reports a
// continuation line.
func (s *scanner) escape() (c byte, cont bool, err error) {
	switch c = s.next(); c {
	case '\n': // also at the end of the file, which then ends the value
		return 0, true, nil
	case 't':
		return '\t', false, nil
	case 'b':
		return '\b', false, nil
	case 'n':
		return '\n', false, nil
	case '\\', '"':
		return c, false, nil
	}
	return 0, false, fmt.Errorf("%w: unknown escape \\%c", errBad, c)
}
