//go:build !linux

package proc

import "fmt"

// ReadStat needs /proc.
func ReadStat(pid int) (Stat, error) {
	return Stat{}, fmt.Errorf("read /proc/%d/stat: %w", pid, ErrNotSupported)
}

// Children needs /proc: it finds none.
func Children(ppid int) []int { return nil }

// Descendants needs /proc: it finds none.
func Descendants(pid int) []int { return nil }

// KillBelow needs /proc: it finds none.
func KillBelow(pid int) {}

// BecomeSubreaper has no equivalent here: a daemon that left a child's process group
// with setsid is not found.
func BecomeSubreaper() error { return fmt.Errorf("become a child subreaper: %w", ErrNotSupported) }

// ReapOrphans has nothing to find without a subreaper.
func ReapOrphans() {}

// KillByEnv cannot read other processes' environments here.
func KillByEnv(kv string) error {
	return fmt.Errorf("find processes by environment: %w", ErrNotSupported)
}

// EndByEnv cannot read other processes' environments here.
func EndByEnv(kv string) error {
	return fmt.Errorf("find processes by environment: %w", ErrNotSupported)
}
