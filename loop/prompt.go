package loop

import (
	"bytes"
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
	"text/template"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/human"
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
	// Train is loop.train_visibility: what the agent sees of the train split.
	Train string
}

// learningsTail is how much of learnings.md the prompt carries.
const learningsTail = 4000

// attemptTemplate is the prompt of an attempt, a repair or a generation's agent: the
// program file, then the context block.
//
//go:embed prompts/attempt.tmpl
var attemptTemplate string

// attemptPrompt is parsed on first use, not at package init: every hgate command links
// loop, and parsing it at init cost each start (hgate --version too) about 0.2 ms. A
// sync.Once, not a package-level sync.OnceValue, which allocates at every start.
var attemptParsed struct {
	once sync.Once
	t    *template.Template
}

func attemptPrompt() *template.Template {
	attemptParsed.once.Do(func() {
		attemptParsed.t = template.Must(template.New("attempt").Parse(attemptTemplate))
	})
	return attemptParsed.t
}

// promptView is promptInput with what the template shows already worded.
type promptView struct {
	promptInput
	BestText, AllowText, Loose, Report, LearningsText string
	TrainText                                         string // "" for traces, the default: the line is left out
}

// buildPrompt is the prompt of an attempt, a repair or a generation's agent.
func buildPrompt(in promptInput) string {
	v := promptView{promptInput: in, BestText: "none recorded", AllowText: allowText(in.Allow),
		LearningsText: strings.TrimSpace(in.Learnings)}
	v.Program = strings.TrimRight(in.Program, "\n")
	if in.Best != nil {
		v.BestText = fmt.Sprintf("%.4f", *in.Best)
	}
	if in.Sandboxed {
		v.Loose = strings.Join(slashless(in.Allow), ", ")
	}
	if in.Previous != nil {
		v.Report = strings.TrimSuffix(failureReport(in.Previous, in.Train), "\n")
	}
	v.TrainText = trainText(in.Train)
	var b strings.Builder
	if err := attemptPrompt().Execute(&b, v); err != nil {
		panic(err) // a template the tests run over every input it has a branch for
	}
	return b.String()
}

// trainText is the prompt's line on what the agent sees of the train split, by
// loop.train_visibility; none for traces, the default, so that its prompts read as before.
// A switch, not a map literal, which is built at every start of every command.
func trainText(visibility string) string {
	switch visibility {
	case config.TrainScores:
		return "The train split shows you its results per task (hgate bench, the gate's Step 1), not their traces (loop.train_visibility: scores)."
	case config.TrainNone:
		return "The train split is not shown to you: hgate bench is refused, and a gate says only whether Step 1 passed (loop.train_visibility: none)."
	}
	return ""
}

// failureReport describes a gate report for the agent: train-side detail
// (violations, failing suite task ids; with train none, only whether Step 1 passed) and
// the test split only as its aggregate score.
func failureReport(r *gate.Answer, train string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Verdict: %s\n", r.Verdict)
	s := r.Steps
	if s.Step0 != nil && !s.Step0.OK {
		step0Report(&b, s.Step0.Violations)
	}
	if s.Step1 != nil && !s.Step1.Skipped {
		step1Report(&b, s.Step1, train)
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
	if s.Step3 != nil && len(s.Step3.Promoted) > 0 && train != config.TrainNone {
		fmt.Fprintf(&b, "Step 3: promoted into the suite: %s\n", strings.Join(s.Step3.Promoted, ", "))
	}
	if s == (gate.Steps{}) {
		// Rejected before the gate ran (the agent worked around hgate).
		for _, why := range TrainReasons(r.Reasons, train) {
			fmt.Fprintf(&b, "%s\n", why)
		}
	}
	return b.String()
}

// step0Report is failureReport's Step 0: each path changed outside the allowlist, or in
// it in a way no allowlist lets through (its detail says which: a file over
// gate.max_file_bytes, one its owner may not read, a hard link, a symlink out).
func step0Report(b *strings.Builder, violations []gitguard.Violation) {
	b.WriteString("Step 0 (file guard) failed; paths changed outside the allowlist, or in a way it never lets through:\n")
	for _, v := range violations {
		p := v.Path
		if p == "" {
			p = "(history)"
		}
		fmt.Fprintf(b, "  - %s: %s", human.Printable(p, false), v.Kind)
		if v.Detail != "" {
			fmt.Fprintf(b, "; %s", human.Printable(v.Detail, false))
		}
		if v.Hint != "" {
			fmt.Fprintf(b, " (revert: %s)", v.Hint)
		}
		b.WriteString("\n")
	}
}

// step1Report is failureReport's Step 1: with train none, only whether it passed.
func step1Report(b *strings.Builder, s1 *gate.Step1, train string) {
	if train == config.TrainNone {
		fmt.Fprintf(b, "Step 1 (regression suite, train split): %s\n", map[bool]string{true: "passed", false: "failed"}[s1.OK])
		return
	}
	fmt.Fprintf(b, "Step 1 (regression suite, train split): %d/%d passed, threshold %.0f%%", s1.Passed, s1.Total, s1.Threshold*100)
	if len(s1.Failed) > 0 {
		fmt.Fprintf(b, "; failing: %s", strings.Join(s1.Failed, ", "))
	}
	b.WriteString("\n")
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

// TrainReasons is a gate's reasons as an agent that sees train as loop.train_visibility
// says may read them: with none, a Step 1 reason (it names train tasks, or their count)
// becomes "step 1 failed".
func TrainReasons(reasons []string, train string) []string {
	if train != config.TrainNone {
		return reasons
	}
	out := make([]string, 0, len(reasons))
	for _, r := range reasons {
		if strings.HasPrefix(r, "step 1: ") {
			r = "step 1: the regression suite (train split) failed; loop.train_visibility: none shows no more"
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// HideTrain strips from a gate's answer what an agent that sees nothing of the train split
// (loop.train_visibility: none) may not read: Step 1 keeps whether it passed and its counts
// (which the text needs), no task id and no trace; Step 3 only that it ran; the reasons as
// TrainReasons words them. For the answer of a gate the loop
// serves its agent; the loop's own records keep everything.
func HideTrain(a *gate.Answer) {
	if s1 := a.Steps.Step1; s1 != nil {
		a.Steps.Step1 = &gate.Step1{OK: s1.OK, Skipped: s1.Skipped, Passed: s1.Passed, Total: s1.Total, Threshold: s1.Threshold,
			Failed: []string{}, StoppedEarly: s1.StoppedEarly}
	}
	if s3 := a.Steps.Step3; s3 != nil {
		a.Steps.Step3 = &gate.Step3{Ran: s3.Ran, Promoted: []string{}, Failed: []string{}}
	}
	a.Reasons = TrainReasons(a.Reasons, config.TrainNone)
}
