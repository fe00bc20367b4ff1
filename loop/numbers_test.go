package loop

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/hgate/hgate/config"
)

var floatRE = regexp.MustCompile(`[0-9]*\.[0-9]+`)

// The loop's text is for people: an iteration's line, a budget stop and the closing line
// carry no float with more than 6 significant digits, dollars to the cent and tokens
// grouped, whatever sums feed them (0.1+0.2 is 0.30000000000000004); the line shows the
// results.tsv row next to the run's iteration, and the attempts when there were repairs.
func TestLogNumbersReadable(t *testing.T) {
	var log bytes.Buffer
	dir := t.TempDir()
	r := &runner{log: &log, dir: dir, j: &journal{RunID: "r1", SpendUSD: 0.1 + 0.2, SpendTokens: 1234567},
		cfg: config.Loop{BudgetUSD: 0.1 + 0.2, BudgetTokens: 1234567}}
	score, verdict := 1.0/3, "pass"
	r.report(Iteration{Iteration: 8, Row: 6, Outcome: OutcomeKept, Agent: AgentOK, Verdict: &verdict, ValScore: &score,
		Commit: "0123456789abcdef", Repairs: 2, SpendUSD: 0.1 + 0.2, SpendTokens: 12345, CumulativeUSD: 0.6000000000000001, CumulativeTokens: 1234567})
	log.WriteString(r.book().overBudget() + "\n")
	log.WriteString(stoppedLine(&Summary{StopReason: StopBudget, StopDetail: r.book().overBudget(), Kept: 1, Rejected: 2,
		SpendUSD: 0.1 + 0.2, SpendTokens: 1234567}, "summary.json") + "\n")
	text := log.String()
	for _, m := range floatRE.FindAllString(text, -1) {
		if len(strings.TrimLeft(strings.Replace(m, ".", "", 1), "0")) > 6 {
			t.Errorf("%q has more than 6 significant digits in:\n%s", m, text)
		}
	}
	for _, want := range []string{"[loop] iteration 8: kept", "commit 0123456 (row 6) after 3 attempts", "spent $0.30, 12,345 tokens; run $0.60, 1,234,567 tokens",
		"$0.30 spent of the $0.30 budget", "spent $0.30, 1,234,567 tokens"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
}

// TestStoppedLineNamesOnlyAWrittenSummary: the run's last line names summary.json only
// when it was written; else it says so (a full disk), never a path that is not there.
func TestStoppedLineNamesOnlyAWrittenSummary(t *testing.T) {
	s := &Summary{StopReason: StopError, StopDetail: "disk full", Kept: 1, Rejected: 2}
	for path, want := range map[string]string{
		"/w/runs/r1/summary.json": "[loop] stopped: error (disk full); 1 kept, 2 rejected; summary: /w/runs/r1/summary.json",
		"":                        "[loop] stopped: error (disk full); 1 kept, 2 rejected; summary.json not written",
	} {
		if got := stoppedLine(s, path); got != want {
			t.Errorf("stoppedLine(%q) = %q, want %q", path, got, want)
		}
	}
}
