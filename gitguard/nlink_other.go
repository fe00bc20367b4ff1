//go:build !unix

package gitguard

import "os"

// linkCount is the number of names the file has: 1, where the platform does not say.
func linkCount(os.FileInfo) uint64 { return 1 }
