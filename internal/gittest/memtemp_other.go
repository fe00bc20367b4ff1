//go:build !linux

package gittest

// memoryUsable is false: MemoryTemp's folder is Linux's tmpfs /dev/shm.
func memoryUsable(string) bool { return false }
