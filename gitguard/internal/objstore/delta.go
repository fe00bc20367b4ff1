package objstore

import "errors"

var errBadDelta = errors.New("malformed delta")

// deltaVarint reads one of a delta's two sizes (little-endian groups of 7
// bits); k is the bytes it took, 0 when b ends first or it overflows.
func deltaVarint(b []byte) (v uint64, k int) {
	for shift := uint(0); k < len(b) && shift < 64; shift += 7 {
		c := b[k]
		k++
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, k
		}
	}
	return 0, 0
}

// patchDelta applies a git delta (pack-format.txt, "Deltified
// representation") to base: the base's size, the result's size, then
// instructions that copy a range of the base or insert literal bytes.
func patchDelta(base, delta []byte) ([]byte, error) {
	srcSize, k := deltaVarint(delta)
	if k == 0 || srcSize != uint64(len(base)) {
		return nil, errBadDelta
	}
	delta = delta[k:]
	dstSize, k := deltaVarint(delta)
	if k == 0 || dstSize > 1<<40 {
		return nil, errBadDelta
	}
	delta = delta[k:]
	out := make([]byte, 0, min(dstSize, 1<<24))
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0:
			off, n, rest, ok := copyArgs(op, delta)
			if !ok || off+n > uint64(len(base)) {
				return nil, errBadDelta
			}
			out = append(out, base[off:off+n]...)
			delta = rest
		case op != 0:
			if int(op) > len(delta) {
				return nil, errBadDelta
			}
			out = append(out, delta[:op]...)
			delta = delta[op:]
		default:
			return nil, errBadDelta // reserved
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, errBadDelta
	}
	return out, nil
}

// copyArgs reads a copy instruction's offset (bits 0-3 of op name its
// bytes) and size (bits 4-6); a size of 0 means 0x10000.
func copyArgs(op byte, b []byte) (off, n uint64, rest []byte, ok bool) {
	for i := range 7 {
		if op&(1<<i) == 0 {
			continue
		}
		if len(b) == 0 {
			return 0, 0, nil, false
		}
		if i < 4 {
			off |= uint64(b[0]) << (8 * i)
		} else {
			n |= uint64(b[0]) << (8 * (i - 4))
		}
		b = b[1:]
	}
	if n == 0 {
		n = 0x10000
	}
	return off, n, b, true
}
