package gate

import (
	"fmt"
	"os"
	"testing"

	"github.com/hgate/hgate/internal/gittest"
	"github.com/hgate/hgate/internal/shimtest"
)

// fixtures is the folder of the repositories the tests make once and copy (gateRepos),
// removed when they end.
var fixtures string

// TestMain puts hgate-sandbox beside the test binary: the tasks run in the clean room are
// started through it, as installed (this binary cannot be the shim: it links no ruleset).
func TestMain(m *testing.M) {
	shimtest.Install()
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
