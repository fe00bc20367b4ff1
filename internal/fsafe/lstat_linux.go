package fsafe

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Lstat describes name itself (a link as a link), with the kernel's stat data (Sys is a
// *syscall.Stat_t): it opens name with O_PATH, never following a link at any component,
// and fstats that descriptor.
func (r *Root) Lstat(name string) (fs.FileInfo, error) {
	record("lstat", r.path, name)
	fd, err := r.openat(name, unix.O_PATH, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), r.Join(name))
	defer f.Close()
	return f.Stat()
}

// nonblock is O_NONBLOCK, but for an O_PATH open (which opens nothing, so cannot block,
// and with which openat2 refuses any other flag).
func nonblock(flags int) int {
	if flags&unix.O_PATH != 0 {
		return 0
	}
	return unix.O_NONBLOCK
}
