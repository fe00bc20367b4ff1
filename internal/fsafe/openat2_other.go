//go:build unix && !linux

package fsafe

import "errors"

var errNoOpenat2 = errors.New("openat2 is not available")

// openat2 exists only on Linux: elsewhere the component-wise walk does the work.
func openat2(dirfd int, name string, flags int, mode uint32) (int, error) {
	return -1, errNoOpenat2
}
