// Package golden holds tests to expected files (an error's exact text beside an invalid
// fixture, a script's expected output): one -update flag for every package's tests
// rewrites them from what the code produces now, for a human to review in the diff.
// Only tests import it.
package golden

import (
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected files from what the code produces now (review the diff)")

// Updating reports whether the tests run with -update.
func Updating() bool { return *update }

// Check fails t unless file holds got; with -update it writes got to file instead.
func Check(t testing.TB, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test -run '%s' -update writes it; review it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s:\n got:\n%s\nwant:\n%s", file, got, want)
	}
}
