// Package record owns the run's history: results.tsv, one row per kept
// iteration (row 0 is the baseline), and learnings.md, the notes written
// after each iteration. Both match auto-harness byte for byte.
//
// results.tsv is append-only: AppendTo re-reads and validates the whole file,
// insists the new row's iteration is the number of rows already present,
// and returns the new content, which the gate writes through the ledger.
// Rows are never edited or dropped.
package record

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hgate/hgate/internal/statefile"
)

// Header is results.tsv's first line.
const Header = "iteration\tval_score\tcommit\tevals_passed\tevals_total\ttimestamp"

// BaselineCommit is the commit column of row 0.
const BaselineCommit = "baseline"

// Row is one line of results.tsv.
type Row struct {
	Iteration   int     // position among the data rows, from 0
	ValScore    float64 // written with 4 decimals
	Commit      string  // short hash (7 hex digits), or "baseline"
	EvalsPassed int
	EvalsTotal  int
	Timestamp   time.Time // written in UTC, to the second
}

// Load reads and validates results.tsv. A missing file is (nil, an error
// wrapping fs.ErrNotExist).
func Load(path string) ([]Row, error) {
	return statefile.Load(path, "results", Parse)
}

// Parse reads the content of results.tsv; file names it in messages. It
// reports every problem at once as `FILE:LINE: column: problem (expected
// ...)`. A missing final newline and CRLF line ends are accepted.
func Parse(file string, data []byte) ([]Row, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%s: file is empty (expected the header line %q)", file, Header)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var errs []error
	fail := func(line int, column, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s: %s", file, line, column, fmt.Sprintf(format, args...)))
	}
	if h := strings.TrimSuffix(lines[0], "\r"); h != Header {
		fail(1, "header", "%q is not the results header (expected %q)", clip(h), Header)
	}
	rows := make([]Row, 0, len(lines)-1)
	i := -1 // the row's position; a blank line is not a row
	for j, text := range lines[1:] {
		n := j + 2 // line number
		text = strings.TrimSuffix(text, "\r")
		if strings.TrimSpace(text) == "" {
			fail(n, "row", "blank line (expected 6 tab-separated columns)")
			continue
		}
		i++
		cols := strings.Split(text, "\t")
		if len(cols) != 6 {
			plural := "s"
			if len(cols) == 1 {
				plural = ""
			}
			fail(n, "row", "%d column%s (expected 6 separated by tabs: %s)", len(cols), plural, strings.ReplaceAll(Header, "\t", ", "))
			continue
		}
		var r Row
		var ok bool
		if r.Iteration, ok = integer(cols[0]); !ok {
			fail(n, "iteration", "%q is not a whole number (expected %d, the row's position)", clip(cols[0]), i)
		} else if r.Iteration != i {
			fail(n, "iteration", "%d is not the row's position (expected %d)", r.Iteration, i)
		}
		score, err := strconv.ParseFloat(cols[1], 64)
		switch {
		case err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(score) || math.IsInf(score, 0):
			fail(n, "val_score", "%q is not a number (expected a number from 0 to 1)", clip(cols[1]))
		case !(score >= 0 && score <= 1):
			fail(n, "val_score", "%s is outside [0, 1] (expected a number from 0 to 1)", cols[1])
		}
		r.ValScore = score
		r.Commit = cols[2]
		if msg := commitProblem(cols[2]); msg != "" {
			fail(n, "commit", "%s", msg)
		}
		passedOK, totalOK := false, false
		if r.EvalsPassed, passedOK = integer(cols[3]); !passedOK {
			fail(n, "evals_passed", "%q is not a whole number (expected a count of passed tasks)", clip(cols[3]))
		}
		if r.EvalsTotal, totalOK = integer(cols[4]); !totalOK {
			fail(n, "evals_total", "%q is not a whole number (expected a count of tasks)", clip(cols[4]))
		}
		if passedOK && totalOK && r.EvalsPassed > r.EvalsTotal {
			fail(n, "evals_passed", "%d is more than evals_total %d (expected at most evals_total)", r.EvalsPassed, r.EvalsTotal)
		}
		if r.Timestamp, ok = parseTime(cols[5]); !ok {
			fail(n, "timestamp", "%q is not a time (expected UTC ISO 8601 like 2026-11-22T03:12:33+00:00)", clip(cols[5]))
		}
		rows = append(rows, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return rows, nil
}

// integer parses a non-negative decimal integer, digits only.
func integer(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// parseTime accepts RFC 3339 (what hgate writes, with or without
// fractional seconds) and, leniently, a time without an offset, read as UTC.
func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// commitProblem checks the commit column: "baseline" or an abbreviated
// hash. git abbreviates to 7 digits but uses more when 7 are ambiguous.
func commitProblem(c string) string {
	if c == BaselineCommit {
		return ""
	}
	if len(c) < 4 || len(c) > 64 || strings.Trim(strings.ToLower(c), "0123456789abcdef") != "" {
		return fmt.Sprintf("%q is not a commit hash (expected 7 hex digits, or %q)", clip(c), BaselineCommit)
	}
	return ""
}

// clip keeps a quoted value in a message to one line of reasonable length.
func clip(s string) string { return statefile.Clip(s, 80) }

// line renders r as a results.tsv line without its newline.
func (r Row) line() (string, error) {
	var errs []error
	if r.Iteration < 0 {
		errs = append(errs, fmt.Errorf("iteration: %d is negative", r.Iteration))
	}
	if !(r.ValScore >= 0 && r.ValScore <= 1) {
		errs = append(errs, fmt.Errorf("val_score: %v is outside [0, 1]", r.ValScore))
	}
	if msg := commitProblem(r.Commit); msg != "" {
		errs = append(errs, errors.New("commit: "+msg))
	}
	if r.EvalsPassed < 0 || r.EvalsTotal < 0 || r.EvalsPassed > r.EvalsTotal {
		errs = append(errs, fmt.Errorf("evals_passed: %d of %d (expected 0 <= passed <= total)", r.EvalsPassed, r.EvalsTotal))
	}
	if r.Timestamp.IsZero() {
		errs = append(errs, errors.New("timestamp: not set"))
	}
	if len(errs) > 0 {
		return "", errors.Join(errs...)
	}
	return fmt.Sprintf("%d\t%.4f\t%s\t%d\t%d\t%s", r.Iteration, r.ValScore, r.Commit, r.EvalsPassed, r.EvalsTotal, statefile.Timestamp(r.Timestamp)), nil
}

// AppendTo returns the content of results.tsv (named path in messages; data is
// nil when the file does not exist yet) with r added, the file created with its
// header when data is nil. Existing bytes are kept as they are (a CRLF file
// stays CRLF); r.Iteration must equal the number of rows data holds.
func AppendTo(path string, data []byte, r Row) ([]byte, error) {
	var rows []Row
	if data != nil {
		var err error
		if rows, err = Parse(path, data); err != nil {
			return nil, err
		}
	}
	if r.Iteration != len(rows) {
		return nil, fmt.Errorf("append to %s: iteration %d (expected %d, the number of rows present)", path, r.Iteration, len(rows))
	}
	line, err := r.line()
	if err != nil {
		return nil, fmt.Errorf("append to %s: %w", path, err)
	}
	eol := "\n"
	if first, _, _ := strings.Cut(string(data), "\n"); strings.HasSuffix(first, "\r") {
		eol = "\r\n" // keep a CRLF file consistent
	}
	out := bytes.Clone(data)
	if len(out) == 0 {
		out = append(out, Header+eol...)
	} else if out[len(out)-1] != '\n' {
		out = append(out, eol...)
	}
	return append(out, line+eol...), nil
}

// Best returns the highest val_score in rows; false when there are none.
func Best(rows []Row) (float64, bool) {
	if len(rows) == 0 {
		return 0, false
	}
	best := rows[0].ValScore
	for _, r := range rows[1:] {
		best = max(best, r.ValScore)
	}
	return best, true
}
