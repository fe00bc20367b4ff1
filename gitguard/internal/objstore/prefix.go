package objstore

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// HashesWithPrefix returns the ids, loose or packed, whose hex form starts
// with prefix (lower-case hex, as git rev-parse takes an abbreviated id).
func (s Store) HashesWithPrefix(prefix string) ([]plumbing.Hash, error) {
	var out []plumbing.Hash
	dirs, err := filepath.Glob(filepath.Join(s.objects, prefix[:min(2, len(prefix))]+"*"))
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if len(filepath.Base(d)) != 2 {
			continue // pack/, info/
		}
		names, _ := os.ReadDir(d)
		for _, n := range names {
			id := filepath.Base(d) + n.Name()
			if h, ok := parseHash(id); ok && strings.HasPrefix(id, prefix) {
				out = append(out, h)
			}
		}
	}
	idxs, err := openIdxs(s.objects)
	if err != nil {
		return nil, err
	}
	for _, x := range idxs {
		found, err := x.withPrefix(prefix)
		x.f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	slices.SortFunc(out, func(a, b plumbing.Hash) int { return strings.Compare(a.String(), b.String()) })
	return slices.Compact(out), nil
}

func parseHash(id string) (plumbing.Hash, bool) {
	var h plumbing.Hash
	if len(id) != 40 {
		return h, false
	}
	_, err := hex.Decode(h[:], []byte(id))
	return h, err == nil
}

// withPrefix lists an index's ids starting with prefix: the fan-out
// narrows them to the buckets of its first byte.
func (x *packIdx) withPrefix(prefix string) ([]plumbing.Hash, error) {
	fan := func(i int) int64 {
		return int64(uint32(x.head[8+4*i])<<24 | uint32(x.head[9+4*i])<<16 | uint32(x.head[10+4*i])<<8 | uint32(x.head[11+4*i]))
	}
	n := fan(255)
	if x.size < idxHashes+n*28+40 {
		return nil, x.bad()
	}
	lo, hi := int64(0), n
	if len(prefix) >= 2 {
		b, err := hex.DecodeString(prefix[:2])
		if err != nil {
			return nil, nil
		}
		hi = fan(int(b[0]))
		if b[0] > 0 {
			lo = fan(int(b[0]) - 1)
		}
	}
	if lo > hi || hi > n {
		return nil, x.bad()
	}
	table := make([]byte, (hi-lo)*20)
	if _, err := x.f.ReadAt(table, idxHashes+lo*20); err != nil {
		return nil, x.bad()
	}
	var out []plumbing.Hash
	for i := 0; i < len(table); i += 20 {
		var h plumbing.Hash
		copy(h[:], table[i:i+20])
		if strings.HasPrefix(h.String(), prefix) {
			out = append(out, h)
		}
	}
	return out, nil
}
