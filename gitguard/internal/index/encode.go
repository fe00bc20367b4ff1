package index

import (
	"crypto/sha1"
	"encoding/binary"
)

// Encode writes idx in git's index format, version 2, 3 or 4 as read
// (3 at least when an entry has extended flags), with the SHA-1 trailer and
// no extensions. Entries must be sorted by path, then stage.
func Encode(idx *File) []byte {
	version := idx.Version
	if version < 2 {
		version = 2
	}
	size := 12 + sha1.Size
	for i := range idx.Entries {
		e := &idx.Entries[i]
		if (e.SkipWorktree || e.IntentToAdd) && version < 3 {
			version = 3
		}
		size += entryFixedLength + 2 + len(e.Path) + 8
	}
	buf := make([]byte, 0, size)
	be := binary.BigEndian
	buf = append(buf, "DIRC"...)
	buf = be.AppendUint32(buf, version)
	buf = be.AppendUint32(buf, uint32(len(idx.Entries)))
	prev := ""
	for i := range idx.Entries {
		e := &idx.Entries[i]
		start := len(buf)
		for _, v := range [...]uint32{e.CtimeS, e.CtimeN, e.MtimeS, e.MtimeN, e.Dev, e.Ino, e.Mode, e.UID, e.GID, e.Size} {
			buf = be.AppendUint32(buf, v)
		}
		buf = append(buf, e.Hash[:]...)
		flags := uint16(e.Stage&3) << 12
		if e.AssumeValid {
			flags |= flagAssumeValid
		}
		ext := e.SkipWorktree || e.IntentToAdd
		if ext {
			flags |= flagExtended
		}
		flags |= uint16(min(len(e.Path), flagNameMask))
		buf = be.AppendUint16(buf, flags)
		if ext {
			var x uint16
			if e.SkipWorktree {
				x |= extSkipWorktree
			}
			if e.IntentToAdd {
				x |= extIntentToAdd
			}
			buf = be.AppendUint16(buf, x)
		}
		if version == 4 {
			// Prefix compression: how much of the previous path to drop, then the rest.
			common := 0
			for common < len(prev) && common < len(e.Path) && prev[common] == e.Path[common] {
				common++
			}
			buf = appendOffsetVarint(buf, uint64(len(prev)-common))
			buf = append(buf, e.Path[common:]...)
			buf = append(buf, 0)
			prev = e.Path
			continue
		}
		buf = append(buf, e.Path...)
		// NUL padded to a multiple of 8 bytes, at least one NUL.
		n := len(buf) - start
		for pad := ((n + 8) &^ 7) - n; pad > 0; pad-- {
			buf = append(buf, 0)
		}
	}
	sum := sha1.Sum(buf)
	return append(buf, sum[:]...)
}

// appendOffsetVarint is the inverse of readOffsetVarint.
func appendOffsetVarint(buf []byte, v uint64) []byte {
	var tmp [10]byte
	i := len(tmp) - 1
	tmp[i] = byte(v & 0x7f)
	for v >>= 7; v != 0; v >>= 7 {
		v--
		i--
		tmp[i] = 0x80 | byte(v&0x7f)
	}
	return append(buf, tmp[i:]...)
}
