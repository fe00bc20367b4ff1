//go:build unix && !linux

package fsafe

import (
	"errors"
	"sync/atomic"
)

var errNoOpenat2 = errors.New("openat2 is not available")

// noOpenat2 is always so here; the tests' switch has nothing to switch.
var noOpenat2 atomic.Bool

// openat2 exists only on Linux: elsewhere the component-wise walk does the work.
func openat2(dirfd int, name string, flags int, mode uint32) (int, error) {
	return -1, errNoOpenat2
}
