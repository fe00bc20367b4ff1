package cleanroom

import (
	"os"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/shimtest"
)

// TestMain lets the test binary act as the sandbox shim: tasks run in the clean room are
// started through it (without this, the shim would run the tests instead of the task).
func TestMain(m *testing.M) {
	sandbox.Main()
	shimtest.Install() // the tasks' shim: hgate-sandbox as installed, not this test binary
	removeTemp := gittest.MemoryTemp()
	code := m.Run()
	removeTemp()
	os.Exit(code)
}
