//go:build unix && !linux

package fsafe

// oTmpfile is Linux's; elsewhere TempFile makes and removes a named file instead.
const oTmpfile = 0
