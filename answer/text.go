package answer

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/human"
)

// The text hgate bench and hgate guard print, shared by the commands and by the MCP
// tools, which render it from the commands' --json objects.

// GuardJSON is hgate guard --json.
type GuardJSON struct {
	FileGuard  bool                 `json:"file_guard"`
	OK         bool                 `json:"ok"`
	Violations []gitguard.Violation `json:"violations"`
}

// WriteText prints the guard's answer as hgate guard does without --json.
func (v *GuardJSON) WriteText(w io.Writer) {
	if len(v.Violations) == 0 {
		fmt.Fprintln(w, "clean: only allowed paths changed")
	}
	for _, vi := range v.Violations {
		fmt.Fprintln(w, ViolationLine(vi, "revert"))
	}
}

// ViolationLine formats a violation on one line: KIND  PATH  (DETAIL; VERB: HINT).
func ViolationLine(v gitguard.Violation, verb string) string {
	line := fmt.Sprintf("%-10s", v.Kind)
	if v.Path != "" {
		line += " " + v.Path
	}
	var notes []string
	if v.Detail != "" {
		notes = append(notes, v.Detail)
	}
	if v.Hint != "" {
		notes = append(notes, verb+": "+v.Hint)
	}
	if len(notes) > 0 {
		line += "  (" + strings.Join(notes, "; ") + ")"
	}
	return human.Printable(line, false) // a path (and so its hint) may hold any byte but / and NUL
}

// BenchJSON is hgate bench --json; Results is keyed by task id.
type BenchJSON struct {
	Full    bool                     `json:"full"`
	Passed  int                      `json:"passed"`
	Results map[string]BenchTaskJSON `json:"results"`
	Total   int                      `json:"total"`
	Spend   *benchmark.Spend         `json:"spend,omitempty"` // where the benchmark reports it (Harbor)
}

// BenchTaskJSON is one task's result in BenchJSON.
type BenchTaskJSON struct {
	Passed bool     `json:"passed"`
	Reason string   `json:"reason"`
	Reward *float64 `json:"reward"` // null: the task returned no reward
}

// WriteText prints the results as hgate bench does without --json, tasks in id order.
func (v *BenchJSON) WriteText(w io.Writer) {
	ids := make([]string, 0, len(v.Results))
	for id := range v.Results {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	width := idWidth(ids)
	for _, id := range ids {
		r := v.Results[id]
		fmt.Fprintln(w, benchLine(id, width, r.Passed, r.Reward, r.Reason))
	}
	fmt.Fprintf(w, "%d/%d train tasks passed\n", v.Passed, v.Total)
}

// idWidth is the width of the id column: the longest id, so that no id
// pushes its score out of line.
func idWidth(ids []string) int {
	w := 0
	for _, id := range ids {
		w = max(w, utf8.RuneCountInString(id))
	}
	return w
}

// benchLine is one task's line of hgate bench and its MCP tool; width is the
// id column's (idWidth).
func benchLine(id string, width int, passed bool, reward *float64, reason string) string {
	status, score := "FAIL", "null"
	if passed {
		status = "PASS"
	}
	if reward != nil {
		score = fmt.Sprintf("%.2f", *reward)
	}
	line := fmt.Sprintf("%s  %-*s  %s", status, width, id, score)
	if reason != "" {
		line += "  (" + reason + ")"
	}
	return line
}
