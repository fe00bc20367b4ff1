package gitconfig

import (
	"errors"
	"fmt"
	"strings"
)

// scanner walks a config file one character at a time the way git's
// config.c does: "\r\n" reads as "\n", and the end of the file as a last
// "\n" with eof set.
type scanner struct {
	data []byte
	pos  int
	line int
	eof  bool
}

func (s *scanner) next() byte {
	if s.pos >= len(s.data) {
		s.eof = true
		s.line++
		return '\n'
	}
	c := s.data[s.pos]
	s.pos++
	if c == '\r' && s.pos < len(s.data) && s.data[s.pos] == '\n' {
		c = '\n'
		s.pos++
	}
	if c == '\n' {
		s.line++
	}
	return c
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' // git's isspace: no \v, \f
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// isKeyChar is git's iskeychar: letters, digits and '-'.
func isKeyChar(c byte) bool { return isAlpha(c) || c >= '0' && c <= '9' || c == '-' }

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// errBad is a line git would refuse to read.
var errBad = errors.New("bad config line")

// Parse reads a config file's content; an error names the line git would
// refuse too.
func Parse(data []byte) (*Config, error) {
	s := &scanner{data: data}
	if strings.HasPrefix(string(data), "\xef\xbb\xbf") {
		s.pos = 3 // a UTF-8 byte order mark, which git skips
	}
	c := &Config{}
	section := ""
	comment := false
	for {
		ch := s.next()
		switch {
		case ch == '\n':
			if s.eof {
				return c, nil
			}
			comment = false
			continue
		case comment || isSpace(ch):
			continue
		case ch == '#' || ch == ';':
			comment = true
			continue
		case ch == '[':
			name, err := s.sectionName()
			if err != nil || name == "" {
				return nil, fmt.Errorf("line %d: %w", s.line+1, errBad)
			}
			section = name
			continue
		case !isAlpha(ch):
			return nil, fmt.Errorf("line %d: %w", s.line+1, errBad)
		}
		e, err := s.keyValue(ch)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", s.line, err)
		}
		if section != "" {
			e.Name = section + "." + e.Name // a key before any section stands alone, as in git
		}
		c.Entries = append(c.Entries, e)
	}
}

// sectionName reads a section header after its '[': "name]" (a dotted
// name is lower-cased whole, as git does) or `name "subsection"]`.
func (s *scanner) sectionName() (string, error) {
	var b strings.Builder
	for {
		c := s.next()
		switch {
		case s.eof:
			return "", errBad
		case c == ']':
			return b.String(), nil
		case isSpace(c):
			sub, err := s.subsection(c)
			if err != nil {
				return "", err
			}
			return b.String() + "." + sub, nil
		case !isKeyChar(c) && c != '.':
			return "", errBad
		}
		b.WriteByte(lower(c))
	}
}

// subsection reads ` "subsection"]`: inside the quotes a backslash keeps the
// character after it (so \" and \\), and no line may end.
func (s *scanner) subsection(c byte) (string, error) {
	for isSpace(c) {
		if c == '\n' {
			return "", errBad
		}
		c = s.next()
	}
	if c != '"' {
		return "", errBad
	}
	var b strings.Builder
	for {
		c = s.next()
		if c == '\n' {
			return "", errBad
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c = s.next(); c == '\n' {
				return "", errBad
			}
		}
		b.WriteByte(c)
	}
	if s.next() != ']' {
		return "", errBad
	}
	return b.String(), nil
}

// keyValue reads a key whose first letter is first, then "= value" or the
// end of the line.
func (s *scanner) keyValue(first byte) (Entry, error) {
	var b strings.Builder
	b.WriteByte(lower(first))
	c := s.next()
	for !s.eof && isKeyChar(c) {
		b.WriteByte(lower(c))
		c = s.next()
	}
	for c == ' ' || c == '\t' {
		c = s.next()
	}
	e := Entry{Name: b.String()}
	if c == '\n' {
		e.NoValue = true
		return e, nil
	}
	if c != '=' {
		return e, errBad
	}
	v, err := s.value()
	e.Value = v
	return e, err
}
