//go:build !fsafetrace

package fsafe

// record is a no-op but in the fsafetrace test build (record_on.go).
func record(op, root, name string) {}
