package cleanroom

import (
	"os"
	"testing"

	"github.com/hgate/hgate/internal/sandbox"
)

// TestMain lets the test binary act as the sandbox shim: tasks run in the clean room are
// started through it (without this, the shim would run the tests instead of the task).
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
