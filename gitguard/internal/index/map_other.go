//go:build !unix

package index

import "os"

// mapFile reads the file at path where hgate does not map files.
func mapFile(path string) ([]byte, error) { return os.ReadFile(path) }
