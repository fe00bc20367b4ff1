package objstore

import (
	"os"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
)

// TestMain puts the tests' temporary folders in memory (gittest.MemoryTemp) and removes
// the repository packedRepo made once for every test.
func TestMain(m *testing.M) {
	removeTemp := gittest.MemoryTemp()
	code := m.Run()
	if packed.dir != "" {
		os.RemoveAll(packed.dir)
	}
	removeTemp()
	os.Exit(code)
}
