package report

import (
	"strings"
	"testing"

	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/runlog"
	"github.com/hgate/hgate/spend"
)

// TestGatewayTable: a run's gateway count is shown in the loop's phase order, then the
// total, with numbers as people read them; a run without one shows no table.
func TestGatewayTable(t *testing.T) {
	c := gatewayapi.Scope{Tokens: spend.Tokens{Input: 1234567, Output: 200}, USD: 0.5, Requests: 3, Refused: 1, Budget: 1}
	rows := gatewayRows(&runlog.Telemetry{Phases: map[string]gatewayapi.Scope{"reflect": c, "attempt": c, "repair": c, "zz": c}, Total: c})
	var got []string
	for _, r := range rows {
		got = append(got, r.Phase)
	}
	if strings.Join(got, " ") != "attempt repair reflect zz total" || gatewayRows(nil) != nil {
		t.Fatalf("rows %q", got)
	}
	rep := &Report{Runs: []Run{{ID: "r1", Finished: true, Iterations: []RunIteration{}, Gateway: rows}, {ID: "r2", Iterations: []RunIteration{}}}}
	var b strings.Builder
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Count(page, `<table class="gateway">`) != 1 || !strings.Contains(page, "<td>repair</td><td class=\"num\">1,234,567</td>") {
		t.Fatalf("the gateway's table is not on the page once, with grouped numbers:\n%s", page[strings.Index(page, "run r1"):])
	}
}
