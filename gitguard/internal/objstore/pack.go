package objstore

import (
	"errors"
	"io"
	"os"

	"github.com/go-git/go-git/v5/plumbing"
)

// pack is an open pack file, with the store its hash deltas find their
// bases in.
type pack struct {
	f    *os.File
	size int64
	s    Store
}

func openPack(path string, s Store) (*pack, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &pack{f: f, size: fi.Size(), s: s}, nil
}

// maxDeltaChain bounds the deltas followed for one object (git's default
// depth is 50, --aggressive's 250).
const maxDeltaChain = 4096

var errBadPack = errors.New("malformed pack entry")

// entry is the header of a pack entry, as pack-format.txt describes it.
type entry struct {
	typ   plumbing.ObjectType
	size  int64         // of the inflated data (for a delta: of the delta)
	base  int64         // an offset delta's base
	ref   plumbing.Hash // a hash delta's base
	start int64         // where the zlib stream starts
}

// header reads the entry at off: type in bits 4-6 of the first byte, size
// in little-endian groups of 4 then 7 bits, then an offset delta's distance
// back (big-endian groups, each continuation adding one) or a hash delta's
// base id.
func (p *pack) header(off int64) (entry, error) {
	var e entry
	if off < 12 || off >= p.size {
		return e, errBadPack
	}
	var head [40]byte
	n, _ := p.f.ReadAt(head[:], off)
	if n == 0 {
		return e, errBadPack
	}
	e.typ = plumbing.ObjectType((head[0] >> 4) & 7)
	e.size = int64(head[0] & 15)
	used := 1
	for shift := 4; head[used-1]&0x80 != 0; shift += 7 {
		if used >= n || shift > 56 {
			return e, errBadPack
		}
		e.size |= int64(head[used]&0x7f) << shift
		used++
	}
	switch e.typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		dist, k, ok := ofsDistance(head[used:n])
		if e.base = off - dist; !ok || dist <= 0 || e.base < 12 {
			return e, errBadPack
		}
		used += k
	case plumbing.REFDeltaObject:
		if used+20 > n {
			return e, errBadPack
		}
		copy(e.ref[:], head[used:used+20])
		used += 20
	default:
		return e, errBadPack
	}
	e.start = off + int64(used)
	return e, nil
}

// ofsDistance decodes an offset delta's distance; k is the bytes it took.
func ofsDistance(b []byte) (dist int64, k int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	c := b[0]
	k = 1
	dist = int64(c & 0x7f)
	for c&0x80 != 0 {
		if k >= len(b) || dist >= 1<<48 {
			return 0, 0, false
		}
		c = b[k]
		k++
		dist = (dist+1)<<7 | int64(c&0x7f)
	}
	return dist, k, true
}

// data inflates an entry's zlib stream.
func (p *pack) data(e entry) ([]byte, error) {
	return inflate(io.NewSectionReader(p.f, e.start, p.size-e.start), e.size)
}

// objectAt reads the object at off, applying its deltas; depth counts the
// deltas followed so far.
func (p *pack) objectAt(off int64, depth int) (plumbing.ObjectType, []byte, error) {
	if depth > maxDeltaChain {
		return 0, nil, errors.New("delta chain too long")
	}
	e, err := p.header(off)
	if err != nil {
		return 0, nil, err
	}
	data, err := p.data(e)
	if err != nil {
		return 0, nil, err
	}
	var btyp plumbing.ObjectType
	var base []byte
	switch e.typ {
	case plumbing.OFSDeltaObject:
		btyp, base, err = p.objectAt(e.base, depth+1)
	case plumbing.REFDeltaObject:
		btyp, base, err = p.s.read(plumbing.AnyObject, e.ref, depth+1)
	default:
		return e.typ, data, nil
	}
	if err != nil {
		return 0, nil, err
	}
	out, err := patchDelta(base, data)
	return btyp, out, err
}

// sizeAt is the content size of the object at off: a delta's target size is
// the second number of its data.
func (p *pack) sizeAt(off int64) (int64, error) {
	e, err := p.header(off)
	if err != nil || e.typ != plumbing.OFSDeltaObject && e.typ != plumbing.REFDeltaObject {
		return e.size, err
	}
	e.size = min(e.size, 20) // two varints of at most 10 bytes
	head, err := p.data(e)
	if err != nil {
		return 0, err
	}
	_, k := deltaVarint(head)
	size, k2 := deltaVarint(head[max(k, 0):])
	if k <= 0 || k2 <= 0 {
		return 0, errBadDelta
	}
	return int64(size), nil
}
