package objstore

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// hgate decodes and encodes commits itself rather than through go-git's
// plumbing/object, which links OpenPGP (ProtonMail/go-crypto, cloudflare/circl,
// crypto/rsa, compress/bzip2, image, go-diff) for commit signatures hgate never
// checks: about half a millisecond of package init on every hgate start.

// Signature is a commit's author or committer.
type Signature struct {
	Name  string
	Email string
	When  time.Time
}

// Header is a commit header line hgate does not interpret (gpgsig, encoding,
// mergetag, ...), kept so a decoded commit encodes to the same bytes. Value
// holds continuation lines joined by "\n", without their leading space.
type Header struct {
	Key, Value string
}

// Commit is a decoded commit object.
type Commit struct {
	TreeHash     plumbing.Hash
	ParentHashes []plumbing.Hash
	Author       Signature
	Committer    Signature
	Extra        []Header // after the committer, in their order
	Message      string   // everything after the blank line ending the headers
}

// DecodeCommit decodes a commit object's content (without its "commit <size>"
// header) as leniently as git reads one: the tree line must come first and
// parent lines right after it, as git requires; the first author and
// committer lines are the signatures (a signature that does not parse leaves
// fields zero, as go-git did: hgate reads only the tree and parents of a
// user's commits); every other header is kept in Extra. A commit written as
// git writes one encodes back to the same bytes; one with headers in another
// order, or a -0000 time zone, does not.
func DecodeCommit(data []byte) (*Commit, error) {
	c := &Commit{}
	rest := data
	line, rest, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil, fmt.Errorf("commit: no tree line")
	}
	var err error
	if c.TreeHash, err = hashField(line, "tree "); err != nil {
		return nil, err
	}
	var author, committer, inParents = false, false, true
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\n"))
		if len(line) == 0 {
			break // the blank line ending the headers
		}
		key, value, _ := bytes.Cut(line, []byte(" "))
		if inParents && string(key) == "parent" {
			p, err := hashField(line, "parent ")
			if err != nil {
				return nil, err
			}
			c.ParentHashes = append(c.ParentHashes, p)
			continue
		}
		inParents = false
		switch {
		case !author && string(key) == "author":
			c.Author, author = decodeSignature(value), true
		case !committer && string(key) == "committer":
			c.Committer, committer = decodeSignature(value), true
		case line[0] == ' ' && len(c.Extra) > 0:
			h := &c.Extra[len(c.Extra)-1]
			h.Value += "\n" + string(line[1:])
		default:
			c.Extra = append(c.Extra, Header{Key: string(key), Value: string(value)})
		}
	}
	c.Message = string(rest)
	return c, nil
}

// hashField reads a "<key><40 hex digits>" line.
func hashField(line []byte, key string) (plumbing.Hash, error) {
	v, ok := bytes.CutPrefix(line, []byte(key))
	if !ok || len(v) != 40 || !isLowerHex(v) {
		return plumbing.ZeroHash, fmt.Errorf("commit: bad %q line %q", key[:len(key)-1], line)
	}
	return plumbing.NewHash(string(v)), nil
}

func isLowerHex(v []byte) bool {
	for _, b := range v {
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f') {
			return false
		}
	}
	return true
}

// decodeSignature reads "Name <email> <unix seconds> <+hhmm>". What does not
// parse is left zero.
func decodeSignature(v []byte) Signature {
	var s Signature
	open := bytes.IndexByte(v, '<')
	end := bytes.LastIndexByte(v, '>')
	if open < 0 || end < open {
		if i := bytes.IndexAny(v, "<>"); i >= 0 {
			v = v[:i] // a name never holds them, or it would not encode back
		}
		s.Name = string(bytes.TrimSpace(v))
		return s
	}
	s.Name = string(bytes.TrimSuffix(v[:open], []byte(" ")))
	s.Email = string(v[open+1 : end])
	secs, zone, _ := bytes.Cut(bytes.TrimPrefix(v[end+1:], []byte(" ")), []byte(" "))
	unix, err := strconv.ParseInt(string(secs), 10, 64)
	if err != nil {
		return s
	}
	off := 0
	if len(zone) == 5 && (zone[0] == '+' || zone[0] == '-') && isDigits(zone[1:]) {
		hh, _ := strconv.Atoi(string(zone[1:3]))
		mm, _ := strconv.Atoi(string(zone[3:5]))
		off = hh*3600 + mm*60
		if zone[0] == '-' {
			off = -off
		}
	}
	s.When = time.Unix(unix, 0).In(time.FixedZone("", off))
	return s
}

func isDigits(v []byte) bool {
	for _, b := range v {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// appendSignature appends "Name <email> <unix seconds> <+hhmm>".
func appendSignature(buf []byte, s Signature) []byte {
	buf = append(buf, s.Name...)
	buf = append(buf, " <"...)
	buf = append(buf, s.Email...)
	buf = append(buf, "> "...)
	buf = strconv.AppendInt(buf, max(s.When.Unix(), 0), 10) // git's times are unsigned
	_, off := s.When.Zone()
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	off /= 60
	return fmt.Appendf(append(buf, ' ', sign), "%02d%02d", off/60, off%60)
}

// Encode returns the commit object's content (without its header): the one
// commit encoder.
func (c *Commit) Encode() []byte {
	buf := make([]byte, 0, 256+len(c.Message))
	buf = append(buf, "tree "...)
	buf = append(buf, c.TreeHash.String()...)
	buf = append(buf, '\n')
	for _, p := range c.ParentHashes {
		buf = append(buf, "parent "...)
		buf = append(buf, p.String()...)
		buf = append(buf, '\n')
	}
	buf = appendSignature(append(buf, "author "...), c.Author)
	buf = appendSignature(append(buf, "\ncommitter "...), c.Committer)
	buf = append(buf, '\n')
	for _, h := range c.Extra {
		buf = append(buf, h.Key...)
		buf = append(buf, ' ')
		buf = append(buf, bytes.ReplaceAll([]byte(h.Value), []byte("\n"), []byte("\n "))...)
		buf = append(buf, '\n')
	}
	buf = append(buf, '\n')
	return append(buf, c.Message...)
}
