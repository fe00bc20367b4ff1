package gitguard

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unsafe"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// A lean reader of git's index (versions 2 to 4). go-git's decoder costs
// over 100 ms per 100k entries; this one slices a single read of the file.
// FuzzIndex checks it against go-git's decoder.

// indexEntry is one index entry; the stat fields are git's 32-bit copies.
type indexEntry struct {
	path           string
	ctimeS, ctimeN uint32
	mtimeS, mtimeN uint32
	dev, ino       uint32
	mode           uint32
	uid, gid       uint32
	size           uint32
	hash           plumbing.Hash
	stage          uint8
	assumeValid    bool
	skipWorktree   bool
	intentToAdd    bool
}

func (e *indexEntry) fileMode() filemode.FileMode { return filemode.FileMode(e.mode) }

type indexFile struct {
	version uint32
	entries []indexEntry
	// shared is the shared index file a split index was merged with, and its
	// mtime: its entries are racily clean against that time, not the index's.
	shared                     string
	sharedMtimeS, sharedMtimeN int64
	// cacheTree is the TREE extension's data, unparsed (see cachetree.go).
	cacheTree []byte
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

var errIndexCorrupt = errors.New("index is corrupt")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errIndexCorrupt, fmt.Sprintf(format, args...))
}

// errUnmerged refuses an index holding conflict stages where a commit is
// what is asked about.
func errUnmerged(path string) error {
	return fmt.Errorf("%s is unmerged: resolve the conflict and stage the result first", path)
}

// readIndexFile reads and parses the index at path; the shared index of a
// split index is read from gitDir, as git does (sharedindex.<id>).
func readIndexFile(path, gitDir string) (*indexFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var sharedPath string
	var sharedStat fileStat
	idx, err := parseSplitIndex(data, func(id string) ([]byte, error) {
		sharedPath = filepath.Join(gitDir, "sharedindex."+id)
		st, err := lstat(sharedPath)
		if err != nil {
			return nil, fmt.Errorf("split index: read its shared index: %w", err)
		}
		sharedStat = st
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
		idx.shared, idx.sharedMtimeS, idx.sharedMtimeN = sharedPath, sharedStat.mtimeS, sharedStat.mtimeN
	}
	return idx, nil
}

// parseSplitIndex parses a whole index file, checksum included, and rejects
// what git itself would refuse (unsorted or duplicate entries, bad paths)
// as well as the sparse format, which it does not read. A split index (a
// "link" extension) is merged with the shared index that shared returns.
// The entries' paths share memory with data and the shared index's bytes,
// which must not change afterwards.
func parseSplitIndex(data []byte, shared func(id string) ([]byte, error)) (*indexFile, error) {
	idx, link, err := parseIndexFile(data)
	if err != nil {
		return nil, err
	}
	if link != nil {
		if err := idx.mergeShared(link, shared); err != nil {
			return nil, err
		}
	}
	if err := checkEntries(idx.entries); err != nil {
		return nil, err
	}
	return idx, nil
}

// parseIndexFile parses one index file, checksum included, without the
// checks of the entries as a whole (a split index holds nameless entries).
func parseIndexFile(data []byte) (*indexFile, *splitLink, error) {
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

func parseEntries(body []byte) (*indexFile, *splitLink, error) {
	// Entries' v2/v3 paths slice the file's bytes without copying: the
	// caller never changes data after the parse (see parseSplitIndex).
	sbody := unsafe.String(unsafe.SliceData(body), len(body))
	data := body
	idx := &indexFile{version: binary.BigEndian.Uint32(data[4:8])}
	if idx.version < 2 || idx.version > 4 {
		return nil, nil, corrupt("unsupported version %d", idx.version)
	}
	count := binary.BigEndian.Uint32(data[8:12])
	if uint64(count) > uint64(len(body))/entryFixedLength {
		return nil, nil, corrupt("entry count %d is too large", count)
	}
	idx.entries = make([]indexEntry, count)
	var link *splitLink
	var err error
	off := 12
	prev := ""
	for i := range idx.entries {
		e := &idx.entries[i]
		if off+entryFixedLength > len(body) {
			return nil, nil, corrupt("entry %d is truncated", i)
		}
		b := body[off:]
		be := binary.BigEndian
		e.ctimeS, e.ctimeN = be.Uint32(b[0:]), be.Uint32(b[4:])
		e.mtimeS, e.mtimeN = be.Uint32(b[8:]), be.Uint32(b[12:])
		e.dev, e.ino = be.Uint32(b[16:]), be.Uint32(b[20:])
		e.mode = be.Uint32(b[24:])
		e.uid, e.gid = be.Uint32(b[28:]), be.Uint32(b[32:])
		e.size = be.Uint32(b[36:])
		copy(e.hash[:], b[40:60])
		flags := be.Uint16(b[60:])
		e.assumeValid = flags&flagAssumeValid != 0
		e.stage = uint8((flags & flagStageMask) >> 12)
		n := entryFixedLength
		if flags&flagExtended != 0 {
			if idx.version < 3 {
				return nil, nil, corrupt("entry %d has extended flags in a version 2 index", i)
			}
			if off+n+2 > len(body) {
				return nil, nil, corrupt("entry %d is truncated", i)
			}
			ext := be.Uint16(b[n:])
			e.skipWorktree = ext&extSkipWorktree != 0
			e.intentToAdd = ext&extIntentToAdd != 0
			n += 2
		}
		if idx.version == 4 {
			strip, w := readOffsetVarint(b[n:])
			if w == 0 || strip > uint64(len(prev)) {
				return nil, nil, corrupt("entry %d has a bad path prefix", i)
			}
			n += w
			end := bytes.IndexByte(b[n:], 0)
			if end < 0 {
				return nil, nil, corrupt("entry %d path is not terminated", i)
			}
			e.path = prev[:len(prev)-int(strip)] + string(b[n:n+end])
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
			e.path = sbody[off+n : off+n+nameLen]
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
		switch filemode.FileMode(e.mode) {
		case filemode.Regular, filemode.Executable, filemode.Symlink, filemode.Submodule:
		case filemode.Dir:
			return nil, nil, fmt.Errorf("sparse index (directory entry %q) is not supported; run git sparse-checkout disable", e.path)
		default:
			return nil, nil, corrupt("entry %q has mode %o", e.path, e.mode)
		}
		prev = e.path
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
			idx.cacheTree = body[off+8 : off+8+int(size)]
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
func checkEntries(es []indexEntry) error {
	for i := range es {
		e := &es[i]
		if err := checkIndexPath(e.path); err != nil {
			return corrupt("entry %d: %v", i, err)
		}
		if i > 0 {
			p := &es[i-1]
			c := strings.Compare(p.path, e.path)
			if c > 0 || (c == 0 && p.stage >= e.stage) {
				return corrupt("entries are not sorted at %q", e.path)
			}
			if c == 0 && (p.stage == 0 || e.stage == 0) {
				return errUnmerged(e.path) // git accepts this index, but cannot commit it
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
