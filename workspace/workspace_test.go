package workspace

import (
	"path/filepath"
	"testing"
)

// TestLayout pins the names the README gives the workspace's files (docs/design.md#workspace):
// users, auto-harness and older hgate versions read them by these names.
func TestLayout(t *testing.T) {
	d := Dir(filepath.FromSlash("/r/workspace"))
	for got, want := range map[string]string{
		d.Results():        "/r/workspace/results.tsv",
		d.Suite():          "/r/workspace/suite.json",
		d.TrainResults():   "/r/workspace/train_results.json",
		d.Split():          "/r/workspace/split.json",
		d.Learnings():      "/r/workspace/learnings.md",
		d.Message():        "/r/workspace/loop-message.txt",
		d.Runs():           "/r/workspace/runs",
		d.Receipt("abc"):   "/r/workspace/receipts/abc.json",
		d.Traces("latest"): "/r/workspace/traces/latest",
		d.Path(Baseline):   "/r/workspace/baseline.json",
		d.Path(Report):     "/r/workspace/report.html",
	} {
		if got != filepath.FromSlash(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
