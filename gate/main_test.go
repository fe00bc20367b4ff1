package gate

import (
	"fmt"
	"os"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/sandbox"
	"github.com/hgate/hgate/internal/shimtest"
)

// fixtures is the folder of the repositories the tests make once and copy (gateRepos),
// removed when they end.
var fixtures string

// TestMain lets the test binary act as the sandbox shim: tasks run in the clean room are
// started through it (without this, the shim would run the tests instead of the task).
func TestMain(m *testing.M) {
	sandbox.Main()
	shimtest.Install() // the tasks' shim: hgate-sandbox as installed, not this test binary
	removeTemp := gittest.MemoryTemp()
	var err error
	if fixtures, err = os.MkdirTemp("", "hgate-gate-fixtures-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(fixtures)
	removeTemp()
	os.Exit(code)
}
