package loop

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/statefile"
)

// promptInput is what the context block tells the agent.
type promptInput struct {
	Program     string // the program file's text
	ProgramFile string
	Iteration   int
	Iterations  int // 0 = no limit
	RunID       string
	Best        *float64
	SuiteSize   int
	Allow       []string
	Sandboxed   bool   // the agent runs in the sandbox, which writes slash-less matches in place only
	MessageFile string // slash path from the repository root
	Previous    *gate.Answer
	PrevOutcome Outcome // how the previous iteration ended, "" for the first
	Learnings   string  // tail of learnings.md
	Repair      int     // > 0: a follow-up to make a rejected attempt pass
	// HarnessOn: loop.harness.enabled; Tools are the active tools the agent built for
	// itself, Hidden the number of quarantined artifacts it is not shown.
	HarnessOn bool
	Tools     []string
	Hidden    int
	// With loop.agents > 1: the agent's generation and place in it, and its notes file.
	Generation, AgentIndex, Agents int
	NotesFile                      string
}

// learningsTail is how much of learnings.md the prompt carries.
const learningsTail = 4000

func buildPrompt(in promptInput) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(in.Program, "\n"))
	b.WriteString("\n\n---\n\n## hgate loop context\n\n")
	of := ""
	if in.Iterations > 0 {
		of = fmt.Sprintf(" of %d", in.Iterations)
	}
	fmt.Fprintf(&b, "- Iteration: %d%s (run %s)\n", in.Iteration, of, in.RunID)
	if in.Best != nil {
		fmt.Fprintf(&b, "- Best val_score so far: %.4f\n", *in.Best)
	} else {
		b.WriteString("- Best val_score so far: none recorded\n")
	}
	fmt.Fprintf(&b, "- Regression suite: %d task(s)\n", in.SuiteSize)
	fmt.Fprintf(&b, "- You may change only: %s\n", allowText(in.Allow))
	if in.Sandboxed {
		if loose := slashless(in.Allow); len(loose) > 0 {
			fmt.Fprintf(&b, "- Files that only %s match can be rewritten in place, not created, deleted or replaced by a rename: a tool that writes a temporary file beside them (sed -i, perl -i) is refused.\n", strings.Join(loose, ", "))
		}
	}
	b.WriteString("- Anything else you change is kept aside and reverted. hgate makes the commit; do not commit.\n")
	fmt.Fprintf(&b, "- Optional: write a one-line commit message for your change to %s; lines after it that start with \"Pattern confirmed:\" or \"Needs from human:\" go into learnings.md\n", in.MessageFile)
	if in.Agents > 1 {
		fmt.Fprintf(&b, "- You are agent %d of %d in generation %d, each in its own copy of the repository; the candidates are gated one at a time, each rebased onto the changes kept before it.\n", in.AgentIndex, in.Agents, in.Generation)
		fmt.Fprintf(&b, "- Optional: write what you learned, for the next generation, to %s (hgate adds it to learnings.md)\n", in.NotesFile)
	}
	if in.HarnessOn {
		b.WriteString("\n## Your tools (built by you, qualified by hgate)\n\n")
		if len(in.Tools) == 0 {
			b.WriteString("None yet.\n")
		} else {
			b.WriteString("Call them early: they were built to help with exactly this work.\n")
			for _, t := range in.Tools {
				fmt.Fprintf(&b, "- %s\n", t)
			}
		}
		if in.Hidden > 0 {
			fmt.Fprintf(&b, "%d quarantined artifact(s) hidden.\n", in.Hidden)
		}
	}
	if in.Repair > 0 {
		fmt.Fprintf(&b, "\n## Repair %d\n\nThe gate rejected your change of this iteration (report below). Make the gate pass; do not start anything new.\n", in.Repair)
	}
	if in.Previous != nil {
		title := "Previous gate"
		if in.Repair > 0 {
			title = "Gate report"
		}
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		if in.PrevOutcome != "" {
			fmt.Fprintf(&b, "Outcome: %s\n", in.PrevOutcome)
		}
		b.WriteString(failureReport(in.Previous))
	} else if in.PrevOutcome != "" {
		fmt.Fprintf(&b, "\n## Previous iteration\n\nOutcome: %s\n", in.PrevOutcome)
	}
	if t := strings.TrimSpace(in.Learnings); t != "" {
		b.WriteString("\n## Learnings so far (tail of learnings.md)\n\n")
		b.WriteString(t)
		b.WriteString("\n")
	}
	return b.String()
}

// failureReport describes a gate report for the agent: train-side detail
// (violations, failing suite task ids) and the test split only as its
// aggregate score.
func failureReport(r *gate.Answer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Verdict: %s\n", r.Verdict)
	s := r.Steps
	if s.Step0 != nil && !s.Step0.OK {
		b.WriteString("Step 0 (file guard) failed; paths changed outside the allowlist:\n")
		for _, v := range s.Step0.Violations {
			p := v.Path
			if p == "" {
				p = "(history)"
			}
			fmt.Fprintf(&b, "  - %s: %s", p, v.Kind)
			if v.Hint != "" {
				fmt.Fprintf(&b, " (revert: %s)", v.Hint)
			}
			b.WriteString("\n")
		}
	}
	if s.Step1 != nil && !s.Step1.Skipped {
		fmt.Fprintf(&b, "Step 1 (regression suite, train split): %d/%d passed, threshold %.0f%%", s.Step1.Passed, s.Step1.Total, s.Step1.Threshold*100)
		if len(s.Step1.Failed) > 0 {
			fmt.Fprintf(&b, "; failing: %s", strings.Join(s.Step1.Failed, ", "))
		}
		b.WriteString("\n")
	}
	if s.Step2 != nil {
		fmt.Fprintf(&b, "Step 2 (held-out test split, aggregate only): val_score %.4f", s.Step2.ValScore)
		if s.Step2.Best != nil {
			fmt.Fprintf(&b, ", best %.4f", *s.Step2.Best)
		}
		if s.Step2.OK {
			b.WriteString(" (ok)\n")
		} else {
			b.WriteString(" (below the best)\n")
		}
	}
	if s.Step3 != nil && len(s.Step3.Promoted) > 0 {
		fmt.Fprintf(&b, "Step 3: promoted into the suite: %s\n", strings.Join(s.Step3.Promoted, ", "))
	}
	if s == (gate.Steps{}) {
		// Rejected before the gate ran (the agent worked around hgate).
		for _, why := range r.Reasons {
			fmt.Fprintf(&b, "%s\n", why)
		}
	}
	return b.String()
}

// tail returns the last n bytes of a file, starting at a line. Only those are read:
// the agent writes the files this reads, and may make them huge or a fifo.
func tail(path string, n int) string {
	data, cut, err := statefile.ReadTail(path, int64(n))
	if err != nil {
		return ""
	}
	if cut {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	return string(data)
}

// allowText is the allowlist as the agent reads it: the patterns, then the negations
// that narrow them as "except", which is what they mean unless a later pattern
// re-allows what one excludes. A pattern after a negation that is not a plain path the
// negations leave alone may do so: then the list is given as it is, in order.
func allowText(allow []string) string {
	var pos, neg []string
	for _, p := range allow {
		if body, ok := strings.CutPrefix(p, "!"); ok {
			neg = append(neg, body)
			continue
		}
		if len(neg) > 0 && (strings.ContainsAny(p, "*?[\\") || gitguard.NewMatcher(neg).Match(strings.TrimRight(p, "/"), strings.HasSuffix(p, "/"))) {
			return strings.Join(allow, ", ") + " (in this order; the last pattern that matches decides, ! excludes)"
		}
		pos = append(pos, p)
	}
	if len(neg) == 0 {
		return strings.Join(pos, ", ")
	}
	return strings.Join(pos, ", ") + ", except " + strings.Join(neg, ", ")
}

// slashless are the allow patterns of files without a slash: they match at any depth,
// so the sandbox grants only the files they match when the attempt starts (a folder
// pattern, agent/, is granted whole).
func slashless(allow []string) []string {
	var out []string
	for _, p := range allow {
		if !strings.HasPrefix(p, "!") && !strings.Contains(p, "/") {
			out = append(out, p)
		}
	}
	return out
}
