package gittest

import "golang.org/x/sys/unix"

// memoryMinFree is the least free space MemoryTemp asks of the memory file system: the
// full suite's repositories and rooms of one package fit in far less, and a container's
// 64 MiB /dev/shm does not.
const memoryMinFree = 2 << 30

// memoryUsable reports whether dir can hold the tests' temporary folders: a file system
// that lets them run what they write (tests start their scripts and commands from there;
// containers mount /dev/shm noexec) with memoryMinFree free.
func memoryUsable(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Flags&unix.ST_NOEXEC == 0 && st.Bavail*uint64(st.Bsize) >= memoryMinFree
}
