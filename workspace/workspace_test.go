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
		d.Results():                                 "/r/workspace/results.tsv",
		d.Suite():                                   "/r/workspace/suite.json",
		d.TrainResults():                            "/r/workspace/train_results.json",
		d.Split():                                   "/r/workspace/split.json",
		d.Learnings():                               "/r/workspace/learnings.md",
		d.Message():                                 "/r/workspace/loop-message.txt",
		d.Runs():                                    "/r/workspace/runs",
		d.Receipt("abc"):                            "/r/workspace/receipts/abc.json",
		d.Traces("latest"):                          "/r/workspace/traces/latest",
		d.Path(Baseline):                            "/r/workspace/baseline.json",
		d.Path(Report):                              "/r/workspace/report.html",
		d.Path(Qualify):                             "/r/workspace/qualification/latest",
		d.Path(Harness):                             "/r/workspace/harness.json",
		d.Path(Qualify + "/" + QualifyJSON):         "/r/workspace/qualification/latest/qualification.json",
		filepath.Join(d.Run("r1"), RunConfig):       "/r/workspace/runs/r1/run_config.json",
		filepath.Join(d.Run("r1"), Summary):         "/r/workspace/runs/r1/summary.json",
		filepath.Join(d.Run("r1"), Journal):         "/r/workspace/runs/r1/journal.json",
		filepath.Join(d.Run("r1"), TestSpend):       "/r/workspace/runs/r1/private/test_spend.json",
		filepath.Join(d.Run("r1"), MCPCalls):        "/r/workspace/runs/r1/mcp_calls.jsonl",
		filepath.Join(d.Iteration("r1", 3), Prompt): "/r/workspace/runs/r1/iterations/3/prompt.txt",
		filepath.Join(d.Iteration("r1", 3), AgentStdout): "/r/workspace/runs/r1/iterations/3/agent.stdout",
		filepath.Join(d.Iteration("r1", 3), AgentStderr): "/r/workspace/runs/r1/iterations/3/agent.stderr",
		filepath.Join(d.Iteration("r1", 3), GateAnswer):  "/r/workspace/runs/r1/iterations/3/gate.json",
		filepath.Join(d.Iteration("r1", 3), Activation):  "/r/workspace/runs/r1/iterations/3/activation",
		filepath.Join(d.Iteration("r1", 3), Qualified):   "/r/workspace/runs/r1/iterations/3/qualification",
	} {
		if got != filepath.FromSlash(want) {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}
