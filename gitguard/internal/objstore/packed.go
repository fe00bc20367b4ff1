package objstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// Asked for one object in a pack, go-git decodes the pack's whole index and
// maps every offset to its hash: milliseconds per ten thousand objects, most
// of the fixed cost of the guard and of the pre-commit hook, which read a few
// commits and trees. readPacked instead binary-searches the .idx files for
// the hash and inflates the one object. Anything it does not expect (a loose
// object, a delta against a hash, a version-1 index, odd headers, an object
// over maxPackedObject) sends the caller back to go-git.

// packedCommit is what the guard reads from a commit.
type packedCommit struct {
	tree    plumbing.Hash
	parents []plumbing.Hash
}

// maxPackedObject bounds the size of an object read this way; larger ones
// go through go-git.
const maxPackedObject = 1 << 20

// readPackedCommit finds commit h in a pack of the repository. ok is false
// when the lean path cannot vouch for the answer.
func (s Store) readPackedCommit(h plumbing.Hash) (c packedCommit, ok bool) {
	_, data, ok := s.readPacked(plumbing.CommitObject, h)
	if !ok {
		return c, false
	}
	dc, err := DecodeCommit(data)
	if err != nil {
		return c, false
	}
	return packedCommit{tree: dc.TreeHash, parents: dc.ParentHashes}, true
}

// readPacked reads object h of type t (AnyObject for any) from a pack of the
// repository, checked against its id. ok is false when the lean path cannot
// vouch for the answer: the caller asks go-git.
func (s Store) readPacked(t plumbing.ObjectType, h plumbing.Hash) (plumbing.ObjectType, []byte, bool) {
	objects := filepath.Join(s.commonDir, "objects")
	hex := h.String()
	if _, err := os.Lstat(filepath.Join(objects, hex[:2], hex[2:])); err == nil {
		return 0, nil, false // loose: go-git reads it without any index
	}
	idxs, err := filepath.Glob(filepath.Join(objects, "pack", "pack-*.idx"))
	if err != nil {
		return 0, nil, false
	}
	for _, idx := range idxs {
		off, found, ok := findInIdx(idx, h)
		if !ok {
			return 0, nil, false
		}
		if !found {
			continue
		}
		typ, data, ok := readPackedObject(strings.TrimSuffix(idx, ".idx")+".pack", off, h)
		if !ok || t != plumbing.AnyObject && typ != t {
			return 0, nil, false
		}
		return typ, data, true
	}
	return 0, nil, false
}

var idxMagic = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}

// findInIdx looks h up in a version-2 pack index and returns its offset in
// the pack. ok is false when the file is not such an index.
func findInIdx(path string, h plumbing.Hash) (off int64, found, ok bool) {
	x, ok := openIdx(path)
	if !ok {
		return 0, false, false
	}
	defer x.f.Close()
	return x.find(h)
}

// packIdx is an open version-2 pack index with its fan-out table read.
type packIdx struct {
	f    *os.File
	size int64
	head [8 + 256*4]byte
}

// openIdx opens a pack index; ok is false when it is not a version-2 one.
func openIdx(path string) (*packIdx, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	x := &packIdx{f: f}
	fi, err := f.Stat()
	if err == nil {
		x.size = fi.Size()
		_, err = f.ReadAt(x.head[:], 0)
	}
	if err != nil || !bytes.Equal(x.head[:8], idxMagic) {
		f.Close()
		return nil, false
	}
	return x, true
}

// idxHashes is where a version-2 index's table of hashes starts.
const idxHashes = int64(8 + 256*4)

// position looks h up and returns its position among the index's n
// objects; ok is false when the index is malformed.
func (x *packIdx) position(h plumbing.Hash) (i, n int64, found, ok bool) {
	f, head := x.f, &x.head
	fan := func(i int) int64 { return int64(binary.BigEndian.Uint32(head[8+4*i:])) }
	n = fan(255)
	const hashes = idxHashes
	// hashes, CRCs, 4-byte offsets, then the two checksums at least.
	if x.size < hashes+n*28+40 {
		return 0, 0, false, false
	}
	lo, hi := int64(0), fan(int(h[0]))
	if h[0] > 0 {
		lo = fan(int(h[0]) - 1)
	}
	if lo > hi || hi > n {
		return 0, 0, false, false
	}
	if lo == hi {
		return 0, 0, false, true
	}
	bucket := make([]byte, (hi-lo)*20)
	if _, err := f.ReadAt(bucket, hashes+lo*20); err != nil {
		return 0, 0, false, false
	}
	a, b := 0, int(hi-lo)
	for a < b {
		m := int(uint(a+b) >> 1)
		if bytes.Compare(bucket[m*20:m*20+20], h[:]) < 0 {
			a = m + 1
		} else {
			b = m
		}
	}
	if a == int(hi-lo) || !bytes.Equal(bucket[a*20:a*20+20], h[:]) {
		return 0, 0, false, true
	}
	return lo + int64(a), n, true, true
}

// find looks h up and returns its offset in the pack; ok is false when the
// index is malformed.
func (x *packIdx) find(h plumbing.Hash) (off int64, found, ok bool) {
	i, n, found, ok := x.position(h)
	if !found || !ok {
		return 0, found, ok
	}
	f, hashes := x.f, idxHashes
	var o [8]byte
	if _, err := f.ReadAt(o[:4], hashes+n*24+i*4); err != nil {
		return 0, false, false
	}
	small := binary.BigEndian.Uint32(o[:4])
	if small&0x80000000 == 0 {
		return int64(small), true, true
	}
	// The offset is in the table of 8-byte offsets after the 4-byte ones.
	k := int64(small &^ 0x80000000)
	if _, err := f.ReadAt(o[:], hashes+n*28+k*8); err != nil {
		return 0, false, false
	}
	big := binary.BigEndian.Uint64(o[:])
	if big > 1<<62 {
		return 0, false, false
	}
	return int64(big), true, true
}

// readPackedObject reads the object at off in a pack, undoing offset deltas
// with go-git's patcher, and checks that it hashes to h.
func readPackedObject(path string, off int64, h plumbing.Hash) (plumbing.ObjectType, []byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, nil, false
	}
	typ, data, ok := packObjectAt(f, fi.Size(), off, 0)
	if !ok || plumbing.ComputeHash(typ, data) != h {
		return 0, nil, false
	}
	return typ, data, true
}

// maxDeltaChain bounds the offset deltas followed for one object (git's
// default depth is 50).
const maxDeltaChain = 64

// packObjectAt inflates the object at off in a pack of the given size.
func packObjectAt(f *os.File, packSize, off int64, depth int) (plumbing.ObjectType, []byte, bool) {
	if off < 12 || off >= packSize || depth > maxDeltaChain {
		return 0, nil, false
	}
	var head [32]byte
	n, _ := f.ReadAt(head[:], off)
	if n == 0 {
		return 0, nil, false
	}
	// Type in bits 4-6 of the first byte, size in little-endian groups
	// of 4 then 7 bits.
	typ := plumbing.ObjectType((head[0] >> 4) & 7)
	size := int64(head[0] & 15)
	used := 1
	for shift := 4; head[used-1]&0x80 != 0; shift += 7 {
		if used >= n || shift > 28 {
			return 0, nil, false
		}
		size |= int64(head[used]&0x7f) << shift
		used++
	}
	if size > maxPackedObject {
		return 0, nil, false
	}
	var base int64
	switch typ {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	case plumbing.OFSDeltaObject:
		// The base lies a big-endian distance back, each continuation
		// adding one, as pack-format.txt describes.
		if used >= n {
			return 0, nil, false
		}
		c := head[used]
		used++
		dist := int64(c & 0x7f)
		for c&0x80 != 0 {
			if used >= n || dist >= 1<<48 {
				return 0, nil, false
			}
			c = head[used]
			used++
			dist = (dist+1)<<7 | int64(c&0x7f)
		}
		if base = off - dist; dist <= 0 || base < 12 {
			return 0, nil, false
		}
	default:
		// Deltas against a hash need the index: go-git's business.
		return 0, nil, false
	}
	start := off + int64(used)
	data := make([]byte, size)
	if !inflate(io.NewSectionReader(f, start, packSize-start), data) {
		return 0, nil, false
	}
	if typ != plumbing.OFSDeltaObject {
		return typ, data, true
	}
	btyp, bdata, ok := packObjectAt(f, packSize, base, depth+1)
	if !ok {
		return 0, nil, false
	}
	out, err := packfile.PatchDelta(bdata, data)
	if err != nil || len(out) > maxPackedObject {
		return 0, nil, false
	}
	return btyp, out, true
}

// inflaters are zlib readers with their buffers, reused: a fresh one costs
// about 40 KB, and one command reads a tree per changed directory.
var inflaters sync.Pool

type inflater struct {
	br *bufio.Reader
	zr io.ReadCloser
}

// inflate fills data from the zlib stream in r.
func inflate(r io.Reader, data []byte) bool {
	in, _ := inflaters.Get().(*inflater)
	if in == nil {
		in = &inflater{br: bufio.NewReader(r)}
		zr, err := zlib.NewReader(in.br)
		if err != nil {
			return false
		}
		in.zr = zr
	} else {
		in.br.Reset(r)
		if err := in.zr.(zlib.Resetter).Reset(in.br, nil); err != nil {
			return false
		}
	}
	_, err := io.ReadFull(in.zr, data)
	inflaters.Put(in)
	return err == nil
}
