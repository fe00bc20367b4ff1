package objstore

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
)

// A packed object is found by binary search of the version-2 .idx files for
// its hash (the fan-out table narrows it to one bucket) and inflated alone:
// decoding a pack's whole index, as go-git did, costs milliseconds per ten
// thousand objects on every start of the guard and the pre-commit hook.

// readPacked reads object h from a pack of the repository, undoing deltas;
// found is false when no pack index lists it. The caller checks the content
// against h.
func (s Store) readPacked(h plumbing.Hash, depth int) (plumbing.ObjectType, []byte, bool, error) {
	return s.inPack(h, func(p *pack, off int64) (plumbing.ObjectType, []byte, error) {
		return p.objectAt(off, depth)
	})
}

// packedSize is the size of packed object h's content, reading no more of
// it than the headers.
func (s Store) packedSize(h plumbing.Hash) (int64, bool, error) {
	var size int64
	_, _, found, err := s.inPack(h, func(p *pack, off int64) (plumbing.ObjectType, []byte, error) {
		n, err := p.sizeAt(off)
		size = n
		return 0, nil, err
	})
	return size, found, err
}

// inPack finds h in the pack indexes and calls read with its pack and
// offset.
func (s Store) inPack(h plumbing.Hash, read func(*pack, int64) (plumbing.ObjectType, []byte, error)) (plumbing.ObjectType, []byte, bool, error) {
	idxs, err := openIdxs(s.objects)
	if err != nil {
		return 0, nil, false, err
	}
	defer func() {
		for _, x := range idxs {
			x.f.Close()
		}
	}()
	for _, x := range idxs {
		off, found, err := x.find(h)
		if err != nil {
			return 0, nil, false, err
		}
		if !found {
			continue
		}
		p, err := openPack(strings.TrimSuffix(x.f.Name(), ".idx")+".pack", s)
		if err != nil {
			return 0, nil, true, err
		}
		defer p.f.Close()
		typ, data, err := read(p, off)
		if err != nil {
			return 0, nil, true, fmt.Errorf("read object %s: %w", h, err)
		}
		return typ, data, true, nil
	}
	return 0, nil, false, nil
}

// openIdxs opens every pack index of an objects folder.
func openIdxs(objects string) ([]*packIdx, error) {
	paths, err := filepath.Glob(filepath.Join(objects, "pack", "pack-*.idx"))
	if err != nil {
		return nil, err
	}
	var idxs []*packIdx
	for _, p := range paths {
		x, err := openIdx(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed by a repack since the listing
		}
		if err != nil {
			for _, y := range idxs {
				y.f.Close()
			}
			return nil, err
		}
		idxs = append(idxs, x)
	}
	return idxs, nil
}

var idxMagic = []byte{0xff, 't', 'O', 'c', 0, 0, 0, 2}

// packIdx is an open version-2 pack index with its fan-out table read.
type packIdx struct {
	f    *os.File
	size int64
	head [8 + 256*4]byte
}

// openIdx opens a pack index; git has written version 2 by default since
// 2007, and hgate reads no other.
func openIdx(path string) (*packIdx, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	x := &packIdx{f: f}
	fi, err := f.Stat()
	if err == nil {
		x.size = fi.Size()
		_, err = f.ReadAt(x.head[:], 0)
	}
	if err != nil || !bytes.Equal(x.head[:8], idxMagic) {
		f.Close()
		return nil, fmt.Errorf("pack index %s: not a version-2 index (%v)", path, err)
	}
	return x, nil
}

// errBadIdx is a pack index whose tables do not hold together.
var errBadIdx = errors.New("malformed pack index")

// idxHashes is where a version-2 index's table of hashes starts.
const idxHashes = int64(8 + 256*4)

// position looks h up and returns its position among the index's n
// objects.
func (x *packIdx) position(h plumbing.Hash) (i, n int64, found bool, err error) {
	f, head := x.f, &x.head
	fan := func(i int) int64 { return int64(binary.BigEndian.Uint32(head[8+4*i:])) }
	n = fan(255)
	const hashes = idxHashes
	// hashes, CRCs, 4-byte offsets, then the two checksums at least.
	if x.size < hashes+n*28+40 {
		return 0, 0, false, x.bad()
	}
	lo, hi := int64(0), fan(int(h[0]))
	if h[0] > 0 {
		lo = fan(int(h[0]) - 1)
	}
	if lo > hi || hi > n {
		return 0, 0, false, x.bad()
	}
	if lo == hi {
		return 0, 0, false, nil
	}
	bucket := make([]byte, (hi-lo)*20)
	if _, err := f.ReadAt(bucket, hashes+lo*20); err != nil {
		return 0, 0, false, x.bad()
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
		return 0, 0, false, nil
	}
	return lo + int64(a), n, true, nil
}

func (x *packIdx) bad() error { return fmt.Errorf("%s: %w", x.f.Name(), errBadIdx) }

// find looks h up and returns its offset in the pack.
func (x *packIdx) find(h plumbing.Hash) (off int64, found bool, err error) {
	i, n, found, err := x.position(h)
	if !found || err != nil {
		return 0, found, err
	}
	f, hashes := x.f, idxHashes
	var o [8]byte
	if _, err := f.ReadAt(o[:4], hashes+n*24+i*4); err != nil {
		return 0, false, x.bad()
	}
	small := binary.BigEndian.Uint32(o[:4])
	if small&0x80000000 == 0 {
		return int64(small), true, nil
	}
	// The offset is in the table of 8-byte offsets after the 4-byte ones.
	k := int64(small &^ 0x80000000)
	if _, err := f.ReadAt(o[:], hashes+n*28+k*8); err != nil {
		return 0, false, x.bad()
	}
	big := binary.BigEndian.Uint64(o[:])
	if big > 1<<62 {
		return 0, false, x.bad()
	}
	return int64(big), true, nil
}

// inflaters are zlib readers with their buffers, reused: a fresh one costs
// about 40 KB, and one command reads a tree per changed directory.
var inflaters sync.Pool

type inflater struct {
	br *bufio.Reader
	zr io.ReadCloser
}

// inflate reads size bytes from the zlib stream in r. The buffer grows as
// data arrives past 1 MiB, so a corrupt header claiming a huge size costs
// nothing.
func inflate(r io.Reader, size int64) ([]byte, error) {
	in, _ := inflaters.Get().(*inflater)
	if in == nil {
		in = &inflater{br: bufio.NewReader(r)}
		zr, err := zlib.NewReader(in.br)
		if err != nil {
			return nil, err
		}
		in.zr = zr
	} else {
		in.br.Reset(r)
		if err := in.zr.(zlib.Resetter).Reset(in.br, nil); err != nil {
			return nil, err
		}
	}
	defer inflaters.Put(in)
	if size <= 1<<20 {
		data := make([]byte, size)
		_, err := io.ReadFull(in.zr, data)
		return data, err
	}
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, in.zr, size); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
