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
	"strings"
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

func parseEntries(body []byte) (*File, *splitLink, error) {
	// Entries' v2/v3 paths slice the file's bytes without copying: the
	// caller never changes data after the parse (see Parse).
	sbody := unsafe.String(unsafe.SliceData(body), len(body))
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
	var link *splitLink
	var err error
	off := 12
	prev := ""
	for i := range idx.Entries {
		e := &idx.Entries[i]
		if off+entryFixedLength > len(body) {
			return nil, nil, corrupt("entry %d is truncated", i)
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
			if idx.Version < 3 {
				return nil, nil, corrupt("entry %d has extended flags in a version 2 index", i)
			}
			if off+n+2 > len(body) {
				return nil, nil, corrupt("entry %d is truncated", i)
			}
			ext := be.Uint16(b[n:])
			e.SkipWorktree = ext&extSkipWorktree != 0
			e.IntentToAdd = ext&extIntentToAdd != 0
			n += 2
		}
		if idx.Version == 4 {
			strip, w := readOffsetVarint(b[n:])
			if w == 0 || strip > uint64(len(prev)) {
				return nil, nil, corrupt("entry %d has a bad path prefix", i)
			}
			n += w
			end := bytes.IndexByte(b[n:], 0)
			if end < 0 {
				return nil, nil, corrupt("entry %d path is not terminated", i)
			}
			e.Path = prev[:len(prev)-int(strip)] + string(b[n:n+end])
			n += end + 1
		} else {
			nameLen := int(flags & flagNameMask)
			if nameLen == flagNameMask {
				end := bytes.IndexByte(b[n:], 0)
				if end < 0 {
					return nil, nil, corrupt("entry %d path is not terminated", i)
				}
				nameLen = end
			}
			if n+nameLen > len(b) {
				return nil, nil, corrupt("entry %d is truncated", i)
			}
			e.Path = sbody[off+n : off+n+nameLen]
			// Entries are NUL padded to a multiple of 8 bytes.
			padded := (n + nameLen + 8) &^ 7
			if padded > len(b) {
				return nil, nil, corrupt("entry %d is truncated", i)
			}
			if !allZero(b[n+nameLen : padded]) {
				return nil, nil, corrupt("entry %d path is not terminated", i)
			}
			n = padded
		}
		// Before the path check: a sparse directory entry's path ends in "/".
		switch filemode.FileMode(e.Mode) {
		case filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule:
		case filemode.Dir:
			return nil, nil, fmt.Errorf("sparse index (directory entry %q) is not supported; run git sparse-checkout disable", e.Path)
		default:
			return nil, nil, corrupt("entry %q has mode %o", e.Path, e.Mode)
		}
		prev = e.Path
		off += n
	}
	for off < len(body) {
		if off+8 > len(body) {
			return nil, nil, corrupt("extension header is truncated")
		}
		sig := body[off : off+4]
		size := binary.BigEndian.Uint32(body[off+4:])
		if uint64(size) > uint64(len(body)-off-8) {
			return nil, nil, corrupt("extension %q is truncated", sig)
		}
		switch {
		case string(sig) == "link":
			if link != nil {
				return nil, nil, corrupt("two link extensions")
			}
			if link, err = parseLink(body[off+8 : off+8+int(size)]); err != nil {
				return nil, nil, err
			}
		case string(sig) == "TREE":
			idx.CacheTree = body[off+8 : off+8+int(size)]
		case string(sig) == "sdir":
			return nil, nil, errors.New("sparse index is not supported; run git sparse-checkout disable")
		case sig[0] < 'A' || sig[0] > 'Z':
			// Lower-case extensions are required to understand the index.
			return nil, nil, corrupt("unknown required extension %q", sig)
		}
		// REUC, UNTR, FSMN, EOIE, IEOT: caches the guard does not trust.
		off += 8 + int(size)
	}
	return idx, link, nil
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
