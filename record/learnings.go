package record

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/hgate/hgate/internal/statefile"
)

// LearningsHeader is learnings.md's first line.
const LearningsHeader = "# Learnings"

// learningsTemplate is a new learnings.md: the header and a blank line, as
// auto-harness's prepare.py writes it.
const learningsTemplate = LearningsHeader + "\n\n"

// Learning is one iteration's entry in learnings.md.
type Learning struct {
	Iteration      int
	Before, After  float64 // val_score before and after, written with 2 decimals
	Kept           bool    // ✓ when the change was kept, ✗ when reverted
	WhatChanged    string
	Pattern        string // written under "Pattern confirmed"
	Worked         string // written under "What worked / didn't work"
	NeedsFromHuman string
	Unscored       bool // the gate gave no val_score (Step 0 refused it, or nothing ran): "not scored"
}

// String renders the entry as it appears in the file, ending in a newline;
// an empty section reads "—".
func (l Learning) String() string {
	mark := "✗"
	if l.Kept {
		mark = "✓"
	}
	var b strings.Builder
	after := fmt.Sprintf("%.2f", l.After)
	if l.Unscored {
		after = "not scored"
	}
	fmt.Fprintf(&b, "## Iteration %d — val_score: %.2f → %s %s\n", l.Iteration, l.Before, after, mark)
	for _, s := range []struct{ label, text string }{
		{"What changed", l.WhatChanged},
		{"Pattern confirmed", l.Pattern},
		{"What worked / didn't work", l.Worked},
		{"Needs from human", l.NeedsFromHuman},
	} {
		text := strings.TrimSpace(s.text)
		if text == "" {
			text = "—"
		}
		fmt.Fprintf(&b, "\n**%s:** %s\n", s.label, text)
	}
	return b.String()
}

// EnsureLearnings creates learnings.md holding only its header and a blank
// line when the file does not exist; an existing file is left alone.
func EnsureLearnings(path string) error {
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return statefile.WriteAtomic(path, []byte(learningsTemplate))
}

// AppendLearning adds l at the end of learnings.md, separated by a blank
// line, creating the file with its header when missing. Existing content is
// kept byte for byte; the file is rewritten atomically.
func AppendLearning(path string, l Learning) error {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = []byte(learningsTemplate)
	case err != nil:
		return fmt.Errorf("read learnings: %w", err)
	}
	out := []byte(string(data))
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	if len(out) > 0 && !strings.HasSuffix(string(out), "\n\n") {
		out = append(out, '\n')
	}
	out = append(out, l.String()...)
	return statefile.WriteAtomic(path, out)
}

// LearningsCount is how many entries learnings.md holds: a loop run numbers its entries on
// from there, so the file's numbering does not restart with each run.
func LearningsCount(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return strings.Count("\n"+string(data), "\n## Iteration ")
}
