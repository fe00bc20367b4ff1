package cleanroom

import (
	"os"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/shimtest"
)

// TestMain puts hgate-sandbox beside the test binary: the tasks run in the clean room are
// started through it, as installed (this binary cannot be the shim: it links no ruleset).
func TestMain(m *testing.M) {
	shimtest.Install()
	removeTemp := gittest.MemoryTemp()
	code := m.Run()
	removeTemp()
	os.Exit(code)
}
