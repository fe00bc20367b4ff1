package index

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// A split index (git update-index --split-index, or core.splitIndex) keeps
// most entries in a shared file, .git/sharedindex.<id>, and only the changes
// in .git/index, tied together by the "link" extension: the shared index's
// id and two EWAH-compressed bitmaps over its entries, one of entries
// deleted and one of entries replaced by the nameless entries that open the
// split file. go-git cannot read this format (its decoder has no link
// support), and refusing it made every hgate command fail after a plain
// git option, so this reader merges the two files as git's
// merge_base_index does. Documentation/gitformat-index.txt and
// ewah/ewah_io.c describe the formats.

// splitLink is the content of a link extension.
type splitLink struct {
	base    plumbing.Hash // the shared index's id (its checksum); zero: none
	deleted []byte        // EWAH bitmap: shared entries to drop
	replace []byte        // EWAH bitmap: shared entries replaced, in order, by the first entries of the split file
}

func parseLink(b []byte) (*splitLink, error) {
	if len(b) < sha1.Size {
		return nil, corrupt("link extension is too short")
	}
	l := &splitLink{}
	copy(l.base[:], b)
	b = b[sha1.Size:]
	if len(b) == 0 {
		return l, nil
	}
	n := ewahLen(b)
	if n < 0 {
		return nil, corrupt("link extension: delete bitmap is truncated")
	}
	l.deleted, b = b[:n], b[n:]
	if n = ewahLen(b); n < 0 {
		return nil, corrupt("link extension: replace bitmap is truncated")
	}
	if n != len(b) {
		return nil, corrupt("link extension: data after the bitmaps")
	}
	l.replace = b
	return l, nil
}

// ewahLen is the length of the serialized bitmap b starts with, or -1.
func ewahLen(b []byte) int {
	if len(b) < 8 {
		return -1
	}
	words := binary.BigEndian.Uint32(b[4:])
	if uint64(words) > uint64(len(b)-8)/8 || len(b)-8-int(words)*8 < 4 {
		return -1
	}
	return 8 + int(words)*8 + 4
}

// ewahBits decodes a bitmap as git writes it (ewah_serialize): bit count,
// word count, the 64-bit words, and the position of the last marker word,
// all big-endian. Words alternate between a marker (bit 0: the bit of a
// run; bits 1-32: the run's length in words; bits 33-63: how many literal
// words follow) and literal words (least significant bit first). It returns
// the positions of the set bits, ascending; a bit at limit or beyond (past
// the shared index's entries) is an error, which also bounds the work.
func ewahBits(b []byte, limit int) ([]int, error) {
	n := ewahLen(b)
	if n < 0 {
		return nil, errors.New("truncated")
	}
	words := (n - 12) / 8
	w := b[8 : 8+words*8]
	word := func(i int) uint64 { return binary.BigEndian.Uint64(w[i*8:]) }
	var bits []int
	pos := 0
	for i := 0; i < words; {
		m := word(i)
		i++
		run := int((m >> 1) & 0xffffffff)
		literals := int(m >> 33)
		if m&1 != 0 && run > 0 {
			if pos+run*64 > limit {
				return nil, fmt.Errorf("bit %d is past the %d shared entries", pos+run*64-1, limit)
			}
			for k := 0; k < run*64; k++ {
				bits = append(bits, pos+k)
			}
		}
		pos += run * 64
		if literals > words-i {
			return nil, errors.New("literal words past the end")
		}
		for k := 0; k < literals; k++ {
			lw := word(i)
			i++
			for c := 0; c < 64; c++ {
				if lw>>c&1 != 0 {
					if pos+c >= limit {
						return nil, fmt.Errorf("bit %d is past the %d shared entries", pos+c, limit)
					}
					bits = append(bits, pos+c)
				}
			}
			pos += 64
		}
	}
	return bits, nil
}

// mergeShared applies idx, a split index, to the shared index it links to.
func (idx *File) mergeShared(l *splitLink, shared func(id string) ([]byte, error)) error {
	own := idx.Entries
	if l.base.IsZero() {
		// No shared index: every entry is here.
		return nil
	}
	if shared == nil {
		return errors.New("split index: no shared index to read")
	}
	data, err := shared(l.base.String())
	if err != nil {
		return err
	}
	base, blink, err := parseIndexFile(data)
	if err != nil {
		return corrupt("shared index sharedindex.%s: %v", l.base, err)
	}
	if blink != nil {
		return corrupt("shared index sharedindex.%s has a link extension", l.base)
	}
	if !bytes.Equal(data[len(data)-sha1.Size:], l.base[:]) {
		return corrupt("shared index sharedindex.%s has another checksum", l.base)
	}
	out := append([]Entry(nil), base.Entries...)
	deleted, err := ewahBits(l.deleted, len(out))
	if err != nil {
		return corrupt("link extension: delete bitmap: %v", err)
	}
	replace, err := ewahBits(l.replace, len(out))
	if err != nil {
		return corrupt("link extension: replace bitmap: %v", err)
	}
	for k, pos := range replace {
		if pos >= len(out) {
			return corrupt("link extension replaces entry %d of %d", pos, len(out))
		}
		if k >= len(own) {
			return corrupt("link extension replaces more entries than the index holds")
		}
		if own[k].Path != "" {
			return corrupt("replacing entry %d has a name", k)
		}
		e := own[k]
		e.Path = out[pos].Path
		out[pos] = e
	}
	drop := make(map[int]bool, len(deleted))
	for _, pos := range deleted {
		if pos >= len(out) {
			return corrupt("link extension deletes entry %d of %d", pos, len(out))
		}
		drop[pos] = true
	}
	added := own[min(len(replace), len(own)):]
	for k := range added {
		if added[k].Path == "" {
			return corrupt("added entry %d has no name", k)
		}
	}
	// git adds each new entry in place, replacing one of equal path and stage.
	sort.SliceStable(added, func(i, j int) bool { return entryLess(&added[i], &added[j]) })
	merged := make([]Entry, 0, len(out)-len(drop)+len(added))
	a := 0
	for i := range out {
		if drop[i] {
			continue
		}
		for a < len(added) && entryLess(&added[a], &out[i]) {
			merged = append(merged, added[a])
			a++
		}
		if a < len(added) && added[a].Path == out[i].Path && added[a].Stage == out[i].Stage {
			continue // replaced by the added entry, which comes next
		}
		merged = append(merged, out[i])
	}
	merged = append(merged, added[a:]...)
	idx.Entries = merged
	return nil
}

func entryLess(a, b *Entry) bool {
	if c := strings.Compare(a.Path, b.Path); c != 0 {
		return c < 0
	}
	return a.Stage < b.Stage
}
