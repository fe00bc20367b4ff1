//go:build unix

package gitguard

import (
	"os"
	"syscall"
)

// linkCount is the number of names the file has (1 where the platform does not say).
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
