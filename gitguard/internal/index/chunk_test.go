package index

import (
	"crypto/sha1"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// sameAsOnePass fails unless parsing body in chunks gives what one pass gives: the same
// entries and extensions, or the same error.
func sameAsOnePass(t *testing.T, body []byte, chunks int) {
	t.Helper()
	if len(body) < 12 {
		return
	}
	want, wantLink, wantErr := parseEntriesIn(body, 1)
	got, gotLink, err := parseEntriesIn(body, chunks)
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("%d chunks: error %v, one pass: %v", chunks, err, wantErr)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotLink, wantLink) {
		t.Fatalf("%d chunks parsed another index than one pass:\n%+v\n%+v", chunks, got, want)
	}
}

// manyEntries is the body (no checksum) of a version 2 or 3 index of n entries, every
// seventh one with a path longer than the 12-bit name length, and every fifth one with
// extended flags in version 3.
func manyEntries(n int, version uint32) []byte {
	idx := &File{Version: version}
	for i := range n {
		p := fmt.Sprintf("d%03d/f%05d", i/20, i)
		if i%7 == 3 {
			p += strings.Repeat("x", 0x1000)
		}
		e := Entry{Path: p, Mode: 0o100644, MtimeS: uint32(i), Size: uint32(i)}
		e.Hash[0], e.Hash[19] = byte(i), byte(i>>8)
		e.SkipWorktree = version == 3 && i%5 == 0
		idx.Entries = append(idx.Entries, e)
	}
	data := Encode(idx)
	return data[:len(data)-sha1.Size]
}

// TestChunkedParseIsOnePass: an index parsed in chunks reads as in one pass, entries
// and errors alike, wherever an entry is damaged (in the first chunk, the last, or an
// entry skip reads to find a chunk's start), and Parse's result is unchanged.
func TestChunkedParseIsOnePass(t *testing.T) {
	for _, version := range []uint32{2, 3} {
		body := manyEntries(300, version)
		for _, chunks := range []int{2, 3, 8} {
			sameAsOnePass(t, body, chunks)
		}
		one, _, err := parseEntriesIn(body, 1)
		if err != nil || len(one.Entries) != 300 {
			t.Fatalf("version %d: one pass: %v", version, err)
		}
		// Damage each entry's flags, padding and mode in turn, and cut the body short.
		for i := 0; i < 300; i += 13 {
			off := entryOffset(t, body, version, i)
			for _, d := range []struct{ at, v int }{{off + 60, 0x4f}, {off + 61, 0x03}, {off + 27, 0x77}, {off + 62 + 12, 'z'}} {
				b := append([]byte(nil), body...)
				b[d.at] ^= byte(d.v)
				for _, chunks := range []int{2, 3, 8} {
					sameAsOnePass(t, b, chunks)
				}
			}
			sameAsOnePass(t, body[:off+30], 3)
		}
	}
}

// entryOffset is the offset of entry i in body.
func entryOffset(t *testing.T, body []byte, version uint32, i int) int {
	t.Helper()
	p := entryParser{version: version, body: body}
	off, ok := p.skip(12, i)
	if !ok {
		t.Fatalf("entry %d not found", i)
	}
	return off
}

// FuzzChunkedParse: whatever the body, parsing it in chunks gives what one pass gives.
func FuzzChunkedParse(f *testing.F) {
	for _, data := range seedIndexes(f) {
		f.Add(data[:len(data)-sha1.Size], uint8(2))
	}
	f.Add(manyEntries(40, 3), uint8(3))
	f.Fuzz(func(t *testing.T, body []byte, chunks uint8) {
		sameAsOnePass(t, body, 2+int(chunks%7))
	})
}
