package gate

import (
	"os"
	"testing"

	"github.com/hgate/hgate/internal/sandbox"
)

// TestMain lets the test binary serve as the sandbox shim of the tasks it runs.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
