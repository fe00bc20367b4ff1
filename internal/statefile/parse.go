package statefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// A hand-written parser instead of encoding/json's: its syntax errors carry
// offsets that are not always the offending byte, and its decoder stops at the
// first problem and names Go types. Every node here remembers where it
// starts, so each message can point at a line and column.

type kind uint8

const (
	nullKind kind = iota
	boolKind
	numberKind
	stringKind
	arrayKind
	objectKind
)

type node struct {
	kind    kind
	off     int    // byte offset of the value's first byte
	text    string // a number's literal text, or a string's decoded value
	b       bool
	elems   []*node
	members []member
}

type member struct {
	key string
	off int // byte offset of the key's opening quote
	val *node
}

// syntaxError is a parse failure at a byte offset.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// maxDepth bounds nesting so hostile input cannot exhaust the stack.
const maxDepth = 1000

type parser struct {
	data  []byte
	i     int
	depth int
}

// parse reads exactly one JSON value, surrounded only by white space.
func parse(data []byte) (*node, error) {
	p := &parser{data: data}
	if bytes.HasPrefix(data, []byte("\xef\xbb\xbf")) {
		p.i = 3 // a UTF-8 byte order mark, as some Windows editors write
	}
	p.space()
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.data) {
		return nil, &syntaxError{p.i, fmt.Sprintf("unexpected %s after the JSON value (expected end of file)", p.describe())}
	}
	return n, nil
}

func (p *parser) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) at(c byte) bool { return p.i < len(p.data) && p.data[p.i] == c }

// describe names the byte at the cursor for a message.
func (p *parser) describe() string {
	r, _ := utf8.DecodeRune(p.data[p.i:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", p.data[p.i])
	}
	return fmt.Sprintf("character %q", r)
}

func (p *parser) unexpected(expected string) error {
	if p.i >= len(p.data) {
		return &syntaxError{p.i, "unexpected end of file (expected " + expected + ")"}
	}
	return &syntaxError{p.i, fmt.Sprintf("unexpected %s (expected %s)", p.describe(), expected)}
}

func (p *parser) value() (*node, error) {
	if p.i >= len(p.data) {
		return nil, p.unexpected("a value")
	}
	start := p.i
	switch c := p.data[p.i]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		return &node{kind: stringKind, off: start, text: s}, err
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case c == 't':
		return p.literal("true", &node{kind: boolKind, off: start, b: true})
	case c == 'f':
		return p.literal("false", &node{kind: boolKind, off: start})
	case c == 'n':
		return p.literal("null", &node{kind: nullKind, off: start})
	}
	return nil, p.unexpected("a value")
}

func (p *parser) literal(word string, n *node) (*node, error) {
	for j := 0; j < len(word); j++ {
		if !p.at(word[j]) {
			return nil, p.unexpected(fmt.Sprintf("%q", word))
		}
		p.i++
	}
	return n, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return &syntaxError{p.i, fmt.Sprintf("nesting deeper than %d levels", maxDepth)}
	}
	return nil
}

// container reads a '{' or '[' container at p.i, each member with member (at the
// member's first byte), separated by ',' and ended by closing.
func (p *parser) container(k kind, closing byte, member func(n *node) error) (*node, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	n := &node{kind: k, off: p.i}
	p.i++
	p.space()
	if !p.at(closing) {
		for {
			p.space()
			if err := member(n); err != nil {
				return nil, err
			}
			p.space()
			if p.at(closing) {
				break
			}
			if !p.at(',') {
				return nil, p.unexpected("',' or '" + string(closing) + "'")
			}
			p.i++
		}
	}
	p.i++ // closing
	p.depth--
	return n, nil
}

func (p *parser) object() (*node, error) {
	return p.container(objectKind, '}', func(n *node) error {
		if !p.at('"') {
			return p.unexpected("a key in double quotes")
		}
		koff := p.i
		key, err := p.str()
		if err != nil {
			return err
		}
		p.space()
		if !p.at(':') {
			return p.unexpected("':' after the key")
		}
		p.i++
		p.space()
		v, err := p.value()
		if err != nil {
			return err
		}
		n.members = append(n.members, member{key: key, off: koff, val: v})
		return nil
	})
}

func (p *parser) array() (*node, error) {
	return p.container(arrayKind, ']', func(n *node) error {
		v, err := p.value()
		if err != nil {
			return err
		}
		n.elems = append(n.elems, v)
		return nil
	})
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func (p *parser) str() (string, error) {
	start := p.i
	p.i++ // opening quote
	plain := true
	for {
		if p.i >= len(p.data) {
			return "", &syntaxError{start, "string never closed (expected a closing '\"')"}
		}
		c := p.data[p.i]
		switch {
		case c == '"':
			p.i++
			raw := p.data[start:p.i]
			if plain && utf8.Valid(raw) {
				return string(raw[1 : len(raw)-1]), nil
			}
			// The grammar is already checked; encoding/json only unescapes.
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", &syntaxError{start, "invalid string"}
			}
			return s, nil
		case c == '\\':
			plain = false
			if p.i+1 >= len(p.data) {
				return "", &syntaxError{start, "string never closed (expected a closing '\"')"}
			}
			switch e := p.data[p.i+1]; e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if p.i+6 > len(p.data) || !isHex(p.data[p.i+2]) || !isHex(p.data[p.i+3]) || !isHex(p.data[p.i+4]) || !isHex(p.data[p.i+5]) {
					return "", &syntaxError{p.i, `invalid \u escape (expected four hex digits)`}
				}
				p.i += 6
			default:
				return "", &syntaxError{p.i, fmt.Sprintf("invalid escape %q in string", `\`+string(rune(e)))}
			}
		case c < 0x20:
			return "", &syntaxError{p.i, "control character in string (expected it escaped, like \\n)"}
		default:
			p.i++
		}
	}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (p *parser) digits() {
	for p.i < len(p.data) && isDigit(p.data[p.i]) {
		p.i++
	}
}

func (p *parser) number() (*node, error) {
	start := p.i
	if p.at('-') {
		p.i++
	}
	if p.i >= len(p.data) || !isDigit(p.data[p.i]) {
		return nil, p.unexpected("a digit")
	}
	if p.at('0') {
		p.i++
	} else {
		p.digits()
	}
	if p.at('.') {
		p.i++
		if p.i >= len(p.data) || !isDigit(p.data[p.i]) {
			return nil, p.unexpected("a digit after '.'")
		}
		p.digits()
	}
	if p.at('e') || p.at('E') {
		p.i++
		if p.at('+') || p.at('-') {
			p.i++
		}
		if p.i >= len(p.data) || !isDigit(p.data[p.i]) {
			return nil, p.unexpected("a digit in the exponent")
		}
		p.digits()
	}
	return &node{kind: numberKind, off: start, text: string(p.data[start:p.i])}, nil
}

// position turns a byte offset into a 1-based line and a 1-based column
// counted in characters, as editors show them.
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	lineStart := bytes.LastIndexByte(data[:off], '\n') + 1
	return line, 1 + utf8.RuneCount(data[lineStart:off])
}
