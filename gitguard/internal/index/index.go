// Package index reads and writes git's index file (versions 2 to 4, split
// indexes merged with their shared index, the cache-tree extension), and
// hashes the trees an index describes. It is gitguard's codec: it knows the
// format, not the guard; what an entry's stat data vouches for is the
// caller's question. It refuses a sparse index and any required extension
// it does not know, and writes no extensions.
package index

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// A lean reader: go-git's decoder costs over 100 ms per 100k entries; this
// one slices a single read of the file. FuzzIndex checks it against go-git's
// decoder.

// Entry is one index entry; the stat fields are git's 32-bit copies.
type Entry struct {
	Path           string
	CtimeS, CtimeN uint32
	MtimeS, MtimeN uint32
	Dev, Ino       uint32
	Mode           uint32
	UID, GID       uint32
	Size           uint32
	Hash           plumbing.Hash
	Stage          uint8
	AssumeValid    bool
	SkipWorktree   bool
	IntentToAdd    bool
}

func (e *Entry) FileMode() filemode.FileMode { return filemode.FileMode(e.Mode) }

type File struct {
	Version uint32
	Entries []Entry
	// Shared is the Shared index file a split index was merged with, and its
	// mtime: its entries are racily clean against that time, not the index's.
	Shared                     string
	SharedMtimeS, SharedMtimeN int64
	// CacheTree is the TREE extension's data, unparsed (see cachetree.go).
	CacheTree []byte
}

const (
	flagAssumeValid  = 0x8000
	flagExtended     = 0x4000
	flagStageMask    = 0x3000
	flagNameMask     = 0x0fff
	extSkipWorktree  = 0x4000
	extIntentToAdd   = 0x2000
	entryFixedLength = 62
)

var ErrCorrupt = errors.New("index is corrupt")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Unmerged refuses an index holding conflict stages where a commit is
// what is asked about.
func Unmerged(path string) error {
	return fmt.Errorf("%s is unmerged: resolve the conflict and stage the result first", path)
}

// Read reads and parses the index at path; the shared index of a
// split index is read from gitDir, as git does (sharedindex.<id>).
func Read(path, gitDir string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseRead(data, gitDir)
}

// ReadMapped is Read over a read-only mapping of the file, as git reads its index, which
// is never unmapped: the entries' paths point into it. It is for a process that reads
// one index and exits (git's pre-commit hook, `hgate guard`): reading a 0.9 MB index into the heap
// faults in each of its pages (about 220 of the hook's 940 page faults at 10k files),
// where the mapping shares the page cache's. A file truncated while mapped ends the
// process with SIGBUS: the hook then fails, and git refuses the commit.
func ReadMapped(path, gitDir string) (*File, error) {
	data, err := mapFile(path)
	if err != nil {
		return nil, err
	}
	return parseRead(data, gitDir)
}

// parseRead is Read's parse of the index's bytes.
func parseRead(data []byte, gitDir string) (*File, error) {
	var sharedPath string
	var sharedMtime time.Time
	idx, err := Parse(data, func(id string) ([]byte, error) {
		sharedPath = filepath.Join(gitDir, "sharedindex."+id)
		fi, err := os.Lstat(sharedPath)
		if err != nil {
			return nil, fmt.Errorf("split index: read its shared index: %w", err)
		}
		sharedMtime = fi.ModTime()
		data, err := os.ReadFile(sharedPath)
		if err != nil {
			return nil, fmt.Errorf("split index: read its shared index: %w", err)
		}
		return data, nil
	})
	if err != nil {
		return nil, err
	}
	if sharedPath != "" {
		idx.Shared, idx.SharedMtimeS, idx.SharedMtimeN = sharedPath, sharedMtime.Unix(), int64(sharedMtime.Nanosecond())
	}
	return idx, nil
}

// Parse parses a whole index file, checksum included, and rejects
// what git itself would refuse (unsorted or duplicate entries, bad paths)
// as well as the sparse format, which it does not read. A split index (a
// "link" extension) is merged with the shared index that shared returns.
// The entries' paths share memory with data and the shared index's bytes,
// which must not change afterwards.
func Parse(data []byte, shared func(id string) ([]byte, error)) (*File, error) {
	idx, link, err := parseIndexFile(data)
	if err != nil {
		return nil, err
	}
	if link != nil {
		if err := idx.mergeShared(link, shared); err != nil {
			return nil, err
		}
	}
	if err := checkEntries(idx.Entries); err != nil {
		return nil, err
	}
	return idx, nil
}

// parseIndexFile parses one index file, checksum included, without the
// checks of the entries as a whole (a split index holds nameless entries).
func parseIndexFile(data []byte) (*File, *splitLink, error) {
	if len(data) < 12+sha1.Size {
		return nil, nil, corrupt("file is too short")
	}
	if !bytes.Equal(data[:4], []byte("DIRC")) {
		return nil, nil, corrupt("bad signature")
	}
	body := data[:len(data)-sha1.Size]
	trailer := data[len(data)-sha1.Size:]
	// index.skipHash writes a zero trailer; anything else must verify. The
	// checksum runs alongside the parse.
	sumOK := make(chan bool, 1)
	if allZero(trailer) {
		sumOK <- true
	} else {
		go func() {
			sum := sha1.Sum(body)
			sumOK <- bytes.Equal(sum[:], trailer)
		}()
	}
	idx, link, err := parseEntries(body)
	if !<-sumOK {
		return nil, nil, corrupt("checksum mismatch")
	}
	return idx, link, err
}

// chunkEntries is the fewest entries worth a goroutine of their own in parseEntries.
const chunkEntries = 2048

func parseEntries(body []byte) (*File, *splitLink, error) {
	chunks := 1
	if len(body) >= 12 {
		count := int(binary.BigEndian.Uint32(body[8:12]))
		chunks = max(1, min(runtime.GOMAXPROCS(0), count/chunkEntries, 8))
	}
	return parseEntriesIn(body, chunks)
}

// parseEntriesIn is parseEntries with the entries of a version 2 or 3 index parsed in
// up to chunks ranges at once. The fresh pages of the entries' slice (80 bytes an entry,
// about 200 page faults at 10k) are most of the parse, and it comes before the walk can
// start; a version 4 index, whose paths are prefix-compressed against the one before,
// is parsed in one pass. The result, and the error of an index the parse refuses, are
// those of one pass.
func parseEntriesIn(body []byte, chunks int) (*File, *splitLink, error) {
	data := body
	idx := &File{Version: binary.BigEndian.Uint32(data[4:8])}
	if idx.Version < 2 || idx.Version > 4 {
		return nil, nil, corrupt("unsupported version %d", idx.Version)
	}
	count := binary.BigEndian.Uint32(data[8:12])
	if uint64(count) > uint64(len(body))/entryFixedLength {
		return nil, nil, corrupt("entry count %d is too large", count)
	}
	idx.Entries = make([]Entry, count)
	// Entries' v2/v3 paths slice the file's bytes without copying: the
	// caller never changes data after the parse (see Parse).
	p := entryParser{version: idx.Version, body: body, sbody: unsafe.String(unsafe.SliceData(body), len(body))}
	var off int
	var err error
	if chunks > 1 && idx.Version < 4 {
		off, err = p.chunked(idx.Entries, chunks)
	} else {
		off, err = p.run(idx.Entries, 0, 12)
	}
	if err != nil {
		return nil, nil, err
	}
	link, err := parseExtensions(idx, body, off)
	if err != nil {
		return nil, nil, err
	}
	return idx, link, nil
}

// entryParser parses the entries of one index's body.
type entryParser struct {
	version uint32
	body    []byte
	sbody   string // body, as the string the paths slice
}

// chunked parses es in up to n ranges at once, each starting where the entries before
// it end (found from each entry's flags and name length alone, see skip), and returns
// the offset after the last entry. An error is the first range's that has one: the
// ranges before it parsed whole, so it is the error one pass meets first. Where skip
// cannot find a range's start, the rest is parsed with the range before it.
func (p *entryParser) chunked(es []Entry, n int) (int, error) {
	size := (len(es) + n - 1) / n
	starts := []int{12}
	for first := size; first < len(es); first += size {
		off, ok := p.skip(starts[len(starts)-1], size)
		if !ok {
			break
		}
		starts = append(starts, off)
	}
	ends := make([]int, len(starts))
	errs := make([]error, len(starts))
	parse := func(c int) {
		lo, hi := c*size, (c+1)*size
		if c == len(starts)-1 {
			hi = len(es) // the rest, also where skip stopped short
		}
		ends[c], errs[c] = p.run(es[lo:hi], lo, starts[c])
	}
	var wg sync.WaitGroup
	for c := 1; c < len(starts); c++ {
		wg.Go(func() { parse(c) })
	}
	parse(0)
	wg.Wait()
	for c := range starts {
		if errs[c] != nil {
			return 0, errs[c]
		}
		if c+1 < len(starts) && ends[c] != starts[c+1] {
			return 0, corrupt("entry %d does not start where entry %d ends", (c+1)*size, (c+1)*size-1)
		}
	}
	return ends[len(ends)-1], nil
}

// skip returns the offset of the entry k entries after the one at off, reading only
// each entry's flags and name length as entry does; ok is false where an entry is cut
// short or its flags are not a version 2 or 3 entry's.
func (p *entryParser) skip(off, k int) (int, bool) {
	body := p.body
	for range k {
		if off+entryFixedLength > len(body) {
			return 0, false
		}
		flags := binary.BigEndian.Uint16(body[off+60:])
		n := entryFixedLength
		if flags&flagExtended != 0 {
			if p.version < 3 {
				return 0, false
			}
			n += 2
		}
		nameLen := int(flags & flagNameMask)
		if nameLen == flagNameMask {
			if off+n > len(body) {
				return 0, false
			}
			end := bytes.IndexByte(body[off+n:], 0)
			if end < 0 {
				return 0, false
			}
			nameLen = end
		}
		off += (n + nameLen + 8) &^ 7
	}
	return off, off <= len(body)
}

// run parses es, numbered from first, from the entry at off, and returns the offset
// after the last.
func (p *entryParser) run(es []Entry, first, off int) (int, error) {
	prev := ""
	for k := range es {
		n, err := p.entry(&es[k], first+k, off, prev)
		if err != nil {
			return 0, err
		}
		prev = es[k].Path
		off += n
	}
	return off, nil
}

// entry parses entry i, at off, into e and returns its length; prev is the path of
// the entry before (a version 4 path is stored as a change of it).
func (p *entryParser) entry(e *Entry, i, off int, prev string) (int, error) {
	body := p.body
	if off+entryFixedLength > len(body) {
		return 0, corrupt("entry %d is truncated", i)
	}
	b := body[off:]
	be := binary.BigEndian
	e.CtimeS, e.CtimeN = be.Uint32(b[0:]), be.Uint32(b[4:])
	e.MtimeS, e.MtimeN = be.Uint32(b[8:]), be.Uint32(b[12:])
	e.Dev, e.Ino = be.Uint32(b[16:]), be.Uint32(b[20:])
	e.Mode = be.Uint32(b[24:])
	e.UID, e.GID = be.Uint32(b[28:]), be.Uint32(b[32:])
	e.Size = be.Uint32(b[36:])
	copy(e.Hash[:], b[40:60])
	flags := be.Uint16(b[60:])
	e.AssumeValid = flags&flagAssumeValid != 0
	e.Stage = uint8((flags & flagStageMask) >> 12)
	n := entryFixedLength
	if flags&flagExtended != 0 {
		if p.version < 3 {
			return 0, corrupt("entry %d has extended flags in a version 2 index", i)
		}
		if off+n+2 > len(body) {
			return 0, corrupt("entry %d is truncated", i)
		}
		ext := be.Uint16(b[n:])
		e.SkipWorktree = ext&extSkipWorktree != 0
		e.IntentToAdd = ext&extIntentToAdd != 0
		n += 2
	}
	var err error
	if p.version == 4 {
		n, err = p.pathV4(e, i, b, n, prev)
	} else {
		n, err = p.pathV2(e, i, off, b, n, flags)
	}
	if err != nil {
		return 0, err
	}
	// Before the path check: a sparse directory entry's path ends in "/".
	switch filemode.FileMode(e.Mode) {
	case filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule:
	case filemode.Dir:
		return 0, fmt.Errorf("sparse index (directory entry %q) is not supported; run git sparse-checkout disable", e.Path)
	default:
		return 0, corrupt("entry %q has mode %o", e.Path, e.Mode)
	}
	return n, nil
}

// pathV4 reads a version 4 entry's path, at n in its bytes b, and returns the entry's length.
func (p *entryParser) pathV4(e *Entry, i int, b []byte, n int, prev string) (int, error) {
	strip, w := readOffsetVarint(b[n:])
	if w == 0 || strip > uint64(len(prev)) {
		return 0, corrupt("entry %d has a bad path prefix", i)
	}
	n += w
	end := bytes.IndexByte(b[n:], 0)
	if end < 0 {
		return 0, corrupt("entry %d path is not terminated", i)
	}
	e.Path = prev[:len(prev)-int(strip)] + string(b[n:n+end])
	return n + end + 1, nil
}

// pathV2 reads a version 2 or 3 entry's path, at n in its bytes b (at off in the body),
// and returns the entry's length, padding included.
func (p *entryParser) pathV2(e *Entry, i, off int, b []byte, n int, flags uint16) (int, error) {
	nameLen := int(flags & flagNameMask)
	if nameLen == flagNameMask {
		end := bytes.IndexByte(b[n:], 0)
		if end < 0 {
			return 0, corrupt("entry %d path is not terminated", i)
		}
		nameLen = end
	}
	if n+nameLen > len(b) {
		return 0, corrupt("entry %d is truncated", i)
	}
	e.Path = p.sbody[off+n : off+n+nameLen]
	// Entries are NUL padded to a multiple of 8 bytes.
	padded := (n + nameLen + 8) &^ 7
	if padded > len(b) {
		return 0, corrupt("entry %d is truncated", i)
	}
	if !allZero(b[n+nameLen : padded]) {
		return 0, corrupt("entry %d path is not terminated", i)
	}
	return padded, nil
}

// parseExtensions reads the extensions after the entries, from off.
func parseExtensions(idx *File, body []byte, off int) (*splitLink, error) {
	var link *splitLink
	var err error
	for off < len(body) {
		if off+8 > len(body) {
			return nil, corrupt("extension header is truncated")
		}
		sig := body[off : off+4]
		size := binary.BigEndian.Uint32(body[off+4:])
		if uint64(size) > uint64(len(body)-off-8) {
			return nil, corrupt("extension %q is truncated", sig)
		}
		switch {
		case string(sig) == "link":
			if link != nil {
				return nil, corrupt("two link extensions")
			}
			if link, err = parseLink(body[off+8 : off+8+int(size)]); err != nil {
				return nil, err
			}
		case string(sig) == "TREE":
			idx.CacheTree = body[off+8 : off+8+int(size)]
		case string(sig) == "sdir":
			return nil, errors.New("sparse index is not supported; run git sparse-checkout disable")
		case sig[0] < 'A' || sig[0] > 'Z':
			// Lower-case extensions are required to understand the index.
			return nil, corrupt("unknown required extension %q", sig)
		}
		// REUC, UNTR, FSMN, EOIE, IEOT: caches the guard does not trust.
		off += 8 + int(size)
	}
	return link, nil
}

// checkEntries applies to a whole index what git's reader does: valid
// paths, sorted by path then stage, and no stage 0 beside a conflict.
func checkEntries(es []Entry) error {
	for i := range es {
		e := &es[i]
		if err := checkIndexPath(e.Path); err != nil {
			return corrupt("entry %d: %v", i, err)
		}
		if i > 0 {
			p := &es[i-1]
			c := strings.Compare(p.Path, e.Path)
			if c > 0 || (c == 0 && p.Stage >= e.Stage) {
				return corrupt("entries are not sorted at %q", e.Path)
			}
			if c == 0 && (p.Stage == 0 || e.Stage == 0) {
				return Unmerged(e.Path) // git accepts this index, but cannot commit it
			}
		}
	}
	return nil
}

// readOffsetVarint decodes git's offset varint (as in OFS_DELTA).
func readOffsetVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	c := b[0]
	v := uint64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		c = b[i]
		i++
		v = ((v + 1) << 7) | uint64(c&0x7f)
	}
	return v, i
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// checkIndexPath applies git's verify_path: no empty, ".", ".." or ".git"
// components and no leading, trailing or doubled slash.
func checkIndexPath(p string) error {
	if p == "" {
		return errors.New("empty path")
	}
	// One pass over the bytes: only an empty component or one starting
	// with a dot needs a closer look.
	start := 0
	for i := 0; i <= len(p); i++ {
		if i < len(p) {
			if b := p[i]; b != '/' {
				if b == 0 {
					return fmt.Errorf("path %q contains NUL", p)
				}
				continue
			}
		}
		c := p[start:i]
		switch {
		case c == "":
			return fmt.Errorf("bad path %q", p)
		case c[0] != '.':
		case c == ".", c == "..":
			return fmt.Errorf("bad path %q", p)
		case len(c) == 4 && strings.EqualFold(c, ".git"):
			return fmt.Errorf("path %q is inside .git", p)
		}
		start = i + 1
	}
	return nil
}
