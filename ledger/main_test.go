package ledger

import (
	"os"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
)

// TestMain puts the tests' temporary folders in memory (gittest.MemoryTemp).
func TestMain(m *testing.M) {
	removeTemp := gittest.MemoryTemp()
	code := m.Run()
	removeTemp()
	os.Exit(code)
}
