package record

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hgate/hgate/internal/fsafe"
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
	// Where the entry comes from, written on a "**Run:**" line under the heading when Run
	// is set: the loop run, its iteration (Iteration is the run's own number), the
	// results.tsv row it recorded (0: none) and the agent runs it took (attempts,
	// repairs included).
	Run      string
	Row      int
	Attempts int
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
	if l.Run != "" {
		fmt.Fprintf(&b, "\n**Run:** %s\n", l.where())
	}
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

// where names the entry's run, iteration, row and attempts: "run R, iteration 4 (row 6,
// 2 attempts)".
func (l Learning) where() string {
	var extra []string
	if l.Row > 0 {
		extra = append(extra, fmt.Sprintf("row %d", l.Row))
	}
	if l.Attempts > 0 {
		extra = append(extra, Plural(l.Attempts, "attempt"))
	}
	s := fmt.Sprintf("%s, iteration %d", l.Run, l.Iteration)
	if len(extra) > 0 {
		s += " (" + strings.Join(extra, ", ") + ")"
	}
	return s
}

// Plural is "1 attempt", "2 attempts".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// EnsureLearnings creates learnings.md holding only its header and a blank
// line when the file does not exist; an existing file is left alone.
func EnsureLearnings(path string) error {
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return statefile.WriteAtomic(path, []byte(learningsTemplate))
}

// learningsBound is how much of learnings.md hgate reads: the agent writes the file,
// and a sparse one of 64 GB must not be read whole. Up to it the file is rewritten
// atomically with the entry; beyond it the entry is appended in place.
const learningsBound = 1 << 20

// AppendLearning adds l at the end of learnings.md, separated by a blank
// line, creating the file with its header when missing. Existing content is
// kept byte for byte; the file is rewritten atomically, or, when larger than
// learningsBound, the entry is appended with one write.
func AppendLearning(path string, l Learning) error {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0 {
		// A fifo, socket or device the agent left holds no learnings (and a fifo
		// would block the read): start afresh.
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("learnings: %w", err)
		}
	}
	data, cut, err := statefile.ReadTail(path, learningsBound)
	if errors.Is(err, fs.ErrPermission) && reclaim(path) == nil {
		data, cut, err = statefile.ReadTail(path, learningsBound)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP):
		// ELOOP: a symlink, never read through; the write below refuses it by name.
		data = []byte(learningsTemplate)
	case err != nil:
		return fmt.Errorf("read learnings: %w", err)
	}
	sep := separator(data)
	if cut {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return fmt.Errorf("learnings: %w", err)
		}
		_, err = f.Write(append(sep, l.String()...))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	out := append(append(data, sep...), l.String()...)
	return statefile.WriteAtomic(path, out)
}

// reclaim gives learnings.md back its mode when its owner may not read it: the agent may
// write the file, and a chmod 000 the loop did not put back (hgate killed during the
// phase) would stop every later entry. By descriptor, never through a link.
func reclaim(path string) error {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return err
	}
	root, err := fsafe.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return root.Chmod(filepath.Base(path), 0o644)
}

// separator is what goes between data and a new entry: enough newlines for a blank line.
func separator(data []byte) []byte {
	switch {
	case len(data) == 0:
		return nil
	case data[len(data)-1] != '\n':
		return []byte("\n\n")
	case len(data) < 2 || data[len(data)-2] != '\n':
		return []byte("\n")
	}
	return nil
}

// LearningsCount is how many entries learnings.md holds: a loop run numbers its entries on
// from there, so the file's numbering does not restart with each run. Of a file larger
// than learningsBound only the tail is read, and the number of its last entry counts.
func LearningsCount(path string) int {
	data, cut, err := statefile.ReadTail(path, learningsBound)
	if err != nil {
		return 0
	}
	if !cut {
		return strings.Count("\n"+string(data), "\n## Iteration ")
	}
	i := strings.LastIndex(string(data), "\n## Iteration ")
	if i < 0 {
		return 0
	}
	digits := data[i+len("\n## Iteration "):]
	end := 0
	for end < len(digits) && end < 9 && digits[end] >= '0' && digits[end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(string(digits[:end]))
	return n
}

// EndsWith reports whether learnings.md ends with entry: the loop's check that an
// entry a killed hgate appended is not written twice. Only the tail is read.
func EndsWith(path, entry string) bool {
	data, _, err := statefile.ReadTail(path, int64(len(entry)))
	return err == nil && string(data) == entry
}
