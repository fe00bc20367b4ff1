//go:build darwin || freebsd || linux

package walk

import (
	"crypto/sha1"
	"fmt"
	"hash"
	"strconv"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"
)

var readBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// openFile is a file openStat opened; the zero value (ok false) is none.
type openFile struct {
	fd   int
	name string
	ok   bool
}

func (f openFile) close() { closeFd(f.fd) }

// hash hashes the open file as a blob of size bytes (its fstat size).
func (f openFile) hash(size int64) (plumbing.Hash, error) { return hashFd(f.fd, f.name, size) }

// hashFd hashes the open file fd as a blob of size bytes: content of another size
// is an error. Small files cost one read, with no allocation: this runs once per
// tracked file the guard counts.
func hashFd(fd int, name string, size int64) (plumbing.Hash, error) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	hdr := append(buf[:0], "blob "...)
	hdr = strconv.AppendInt(hdr, size, 10)
	hdr = append(hdr, 0)
	off := len(hdr)
	var h hash.Hash // only for files larger than the buffer
	var n int64
	for {
		if off == len(buf) {
			if h == nil {
				h = sha1.New()
			}
			h.Write(buf)
			off = 0
		}
		want := len(buf) - off
		k, err := readFd(fd, buf[off:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if k == 0 {
			break
		}
		off += k
		if n += int64(k); n > size || n == size && k < want {
			break // a short read of a regular file ends at its end: no second read
		}
	}
	if n != size {
		return plumbing.ZeroHash, fmt.Errorf("%s changed while it was read", name)
	}
	var out plumbing.Hash
	if h == nil {
		out = sha1.Sum(buf[:off])
	} else {
		h.Write(buf[:off])
		h.Sum(out[:0])
	}
	return out, nil
}
