package loop

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
)

var updatePrompts = flag.Bool("update-prompts", false, "rewrite testdata/prompts from the prompts as built now")

// TestPromptsGolden pins every prompt the loop writes, byte for byte, over the inputs that
// change them: a first iteration; a later one under the sandbox with tools, a rejected
// previous gate and learnings; a repair; an agent of a generation. The files in
// testdata/prompts were written by the prompt as built before it became a template
// (-update-prompts rewrites them after a change of wording).
func TestPromptsGolden(t *testing.T) {
	best, val := 0.5, 0.25
	rejected := &gate.Answer{Verdict: "reject", Steps: gate.Steps{
		Step0: &gate.Step0{OK: false, Violations: []gitguard.Violation{{Path: "check.sh", Kind: "modified", Hint: "git checkout -- check.sh"}, {Kind: "history"}}},
		Step1: &gate.Step1{Passed: 3, Total: 4, Threshold: 0.8, Failed: []string{"b4"}},
		Step2: &gate.Step2{ValScore: val, Best: &best},
		Step3: &gate.Step3{Promoted: []string{"b2"}},
	}}
	tampered := &gate.Answer{Verdict: "reject", Reasons: []string{"the agent changed hgate's refs behind its back (put back): refs/hgate/best"}}
	cases := map[string]string{
		"first": buildPrompt(promptInput{Program: "# Program\n\nSolve it.\n\n", Iteration: 1, RunID: "r1", SuiteSize: 0,
			Allow: []string{"agent.sh"}, MessageFile: "workspace/loop-message.txt"}),
		"later": buildPrompt(promptInput{Program: "# Program", Iteration: 3, Iterations: 10, RunID: "r1", Best: &best, SuiteSize: 4,
			Allow: []string{"*.go", "!*_test.go", "agent/"}, Sandboxed: true, MessageFile: "workspace/loop-message.txt",
			Previous: rejected, PrevOutcome: OutcomeRejected, Learnings: "\n# Learnings\n\n## Iteration 2\n\n", HarnessOn: true,
			Tools: []string{"MCP server `good`, tools: lookup", "skill `finder`: Find it. (/a/SKILL.md)"}, Hidden: 2}),
		"repair": buildPrompt(promptInput{Program: "# Program\n", Iteration: 3, RunID: "r1", Best: &best, Allow: []string{"agent.sh"},
			MessageFile: "workspace/loop-message.txt", Previous: tampered, Repair: 1, HarnessOn: true}),
		"generation": buildPrompt(promptInput{Program: "# Program\n", Iteration: 5, Iterations: 6, RunID: "r2", SuiteSize: 1,
			Allow: []string{"w/"}, MessageFile: "/ws/iterations/5/loop-message.txt", PrevOutcome: OutcomeKept,
			Generation: 2, AgentIndex: 1, Agents: 3, NotesFile: "/ws/iterations/5/notes.md"}),
		// loop.train_visibility: scores says so; none also drops Step 1's counts and ids and
		// Step 3's promotions.
		"train-scores": buildPrompt(promptInput{Program: "# Program", Iteration: 3, RunID: "r1", Best: &best, SuiteSize: 4,
			Allow: []string{"agent.sh"}, MessageFile: "workspace/loop-message.txt", Previous: rejected, PrevOutcome: OutcomeRejected,
			Train: config.TrainScores}),
		"train-none": buildPrompt(promptInput{Program: "# Program", Iteration: 3, RunID: "r1", Best: &best, SuiteSize: 4,
			Allow: []string{"agent.sh"}, MessageFile: "workspace/loop-message.txt", Previous: rejected, PrevOutcome: OutcomeRejected,
			Train: config.TrainNone}),
	}
	for name, got := range cases {
		path := filepath.Join("testdata", "prompts", name+".txt")
		if *updatePrompts {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s: the prompt changed:\n--- got\n%s\n--- want\n%s", name, got, want)
		}
	}
}
