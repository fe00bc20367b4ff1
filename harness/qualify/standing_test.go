package qualify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/statefile"
)

func art(path, status, content string, checks ...Check) QualifiedArtifact {
	kind, name, _ := strings.Cut(path, "/")
	return QualifiedArtifact{Kind: kind, Name: name, Path: path, Status: status, Content: content, Checks: checks}
}

// TestStand: the last qualification of an iteration quarantines what the iteration built
// with what failed, naming it and its failure; what was judged before and is unchanged
// stands on its own checks; a qualification that is not the last quarantines only what
// failed.
func TestStand(t *testing.T) {
	bad := Check{Name: "self_test", Status: "failed", Message: "exit status 1"}
	newq := func() *Qualification {
		return &Qualification{Failed: 1, Artifacts: []QualifiedArtifact{
			art("mcp/alpha", "passed", "a1"), art("mcp/beta", "failed", "b1", bad), art("mcp/old", "passed", "o1")}}
	}
	q := newq()
	stand(q, Options{Final: true, Iteration: 4, Prior: map[string]string{"mcp/old": "o1", "mcp/alpha": "a0"}})
	want := []string{
		"mcp alpha: quarantined: quarantined with mcp beta, built in the same iteration (4), which failed: mcp beta: self_test failed: exit status 1",
		"mcp beta: quarantined: self_test failed: exit status 1",
		"mcp old: qualified",
	}
	if got := Lines(q); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("final:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	q = newq()
	stand(q, Options{Iteration: 4})
	if q.Artifacts[0].Standing != "qualified" || q.Artifacts[1].Standing != "quarantined" {
		t.Fatalf("not final: %+v", q.Artifacts)
	}
}

// TestNotAgain: an artifact that timed out in this iteration's earlier qualification is not
// run again while unchanged; changed, or failed otherwise, it is.
func TestNotAgain(t *testing.T) {
	to := Check{Name: "smoke", Status: "timeout", Seconds: 10, Message: "initialize: no answer within 10s"}
	earlier := &Qualification{Artifacts: []QualifiedArtifact{art("mcp/mute", "failed", "m1", to),
		art("mcp/bad", "failed", "b1", Check{Name: "self_test", Status: "failed"})}}
	data, err := statefile.EncodeJSON(earlier)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "qualification.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e := readEarlier(p)
	a, ok := notAgain(e, "mcp/mute", "m1")
	if !ok || a.Status != "failed" || a.Checks[0].Status != "timeout" || a.Checks[0].Seconds != 0 ||
		!strings.HasPrefix(a.Checks[0].Message, "not run again: unchanged since it timed out") {
		t.Fatalf("unchanged timeout: %v %+v", ok, a)
	}
	if _, ok := notAgain(e, "mcp/mute", "m2"); ok {
		t.Fatal("a changed artifact was not run again")
	}
	if _, ok := notAgain(e, "mcp/bad", "b1"); ok {
		t.Fatal("an artifact that failed without a timeout was not run again")
	}
	if _, ok := notAgain(readEarlier(""), "mcp/mute", "m1"); ok {
		t.Fatal("no earlier report, yet not run")
	}
}
