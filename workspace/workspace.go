// Package workspace is the layout of hgate's workspace folder (docs/design.md#workspace): the name of
// every state file and folder, in one place, for gate, ledger, loop and report. The files'
// formats belong to suite, split and record; which of them the ledger keeps, to ledger.
package workspace

import (
	"path/filepath"
	"strconv"
)

// The state files, by their names in the workspace (and in the ledger's commits).
const (
	Results      = "results.tsv"
	Suite        = "suite.json"
	TrainResults = "train_results.json"
	Split        = "split.json"
	Learnings    = "learnings.md"
	Baseline     = "baseline.json"    // the gate's own record of the baseline
	ReceiptsDir  = "receipts"         // one receipt per gated tree
	Message      = "loop-message.txt" // where a loop's agent may leave a commit message
	Report       = "report.html"      // hgate report's default output
	RunsDir      = "runs"             // one folder per loop run
	TracesDir    = "traces"
	Qualify      = "qualification/latest" // hgate qualify's report and check outputs
	Harness      = "harness.json"         // which of the agent's tools are qualified or quarantined
)

// The files and folders of one loop run, workspace/runs/<run>/ (docs/design.md#workspace).
const (
	RunConfig   = "run_config.json"
	Summary     = "summary.json" // written when the run stops
	Journal     = "journal.json" // the run's state, for --resume
	Private     = "private"      // what the agent may not read (the test split's spend)
	TestSpend   = "private/test_spend.json"
	MCPCalls    = "mcp_calls.jsonl"    // the activated tools' calls, with the harness phases
	IterDir     = "iterations"         // iterations/<n>/, one per iteration
	Prompt      = "prompt.txt"         // in iterations/<n>/
	AgentStdout = "agent.stdout"       // in iterations/<n>/
	AgentStderr = "agent.stderr"       // in iterations/<n>/
	GateAnswer  = "gate.json"          // in iterations/<n>/ and each repair-<k>/
	Activation  = "activation"         // in iterations/<n>/: what the agent's runs were given
	Qualified   = "qualification"      // in iterations/<n>/: attempt_<k>/qualification.json
	QualifyJSON = "qualification.json" // a qualification's report, in Qualify and each attempt_<k>/
)

// Run is a loop run's folder.
func (d Dir) Run(id string) string { return filepath.Join(d.Runs(), id) }

// Iteration is iteration n's folder in run id.
func (d Dir) Iteration(id string, n int) string {
	return filepath.Join(d.Run(id), IterDir, strconv.Itoa(n))
}

// Receipt is the slash name of the receipt for a gated tree.
func Receipt(tree string) string { return ReceiptsDir + "/" + tree + ".json" }

// Dir is a workspace folder.
type Dir string

// Path is the path of name (a slash name) inside the workspace.
func (d Dir) Path(name string) string { return filepath.Join(string(d), filepath.FromSlash(name)) }

func (d Dir) Results() string      { return d.Path(Results) }
func (d Dir) Suite() string        { return d.Path(Suite) }
func (d Dir) TrainResults() string { return d.Path(TrainResults) }
func (d Dir) Split() string        { return d.Path(Split) }
func (d Dir) Learnings() string    { return d.Path(Learnings) }
func (d Dir) Message() string      { return d.Path(Message) }
func (d Dir) Runs() string         { return d.Path(RunsDir) }

// Receipt is the path of the receipt for a gated tree.
func (d Dir) Receipt(tree string) string { return d.Path(Receipt(tree)) }

// Traces is the folder of one set of traces: "baseline", "latest" or "refused".
func (d Dir) Traces(set string) string { return d.Path(TracesDir + "/" + set) }
