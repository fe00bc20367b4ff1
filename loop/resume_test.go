package loop

import (
	"strings"
	"testing"

	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/gittest"
)

// TestAnchorProblem: every field a resume trusts that is missing or does not name what
// it must is a reason to refuse; a journal as hgate writes it is none.
func TestAnchorProblem(t *testing.T) {
	g := gittest.New(t)
	g.Write("a.txt", "a\n")
	g.Git("add", "-A")
	g.Git("commit", "-qm", "init")
	head := strings.TrimSpace(g.Git("rev-parse", "HEAD"))
	repo, err := gitguard.Open(g.Dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{repo: repo}
	ok := func() *journal {
		return &journal{RunID: "r", Next: 2, Phase: phaseAgent, PreHead: head, Sandbox: "landlock ABI 6",
			Current: &Iteration{Iteration: 2, Sandbox: "landlock ABI 6"}, Refs: gitguard.RefSnapshot{},
			Iterations: []Iteration{{Iteration: 1}}}
	}
	for _, tc := range []struct {
		name string
		edit func(j *journal)
		want string // "" = no problem
	}{
		{"as written", func(j *journal) {}, ""},
		{"between iterations", func(j *journal) { j.Phase, j.Current, j.Refs = phaseNone, nil, nil }, ""},
		{"no refs in the agent's phase", func(j *journal) { j.Refs = nil }, "refs: missing for iteration 2's agent phase"},
		{"no refs in the gate's phase", func(j *journal) { j.Phase, j.Refs = phaseGate, nil }, ""},
		{"no run id", func(j *journal) { j.RunID = "" }, "run_id: missing"},
		{"no next", func(j *journal) { j.Next = 0 }, "next: 0"},
		{"no sandbox", func(j *journal) { j.Sandbox = "" }, "sandbox: missing"},
		{"no current", func(j *journal) { j.Current = nil }, `current: missing for phase "agent"`},
		{"current without sandbox", func(j *journal) { j.Current.Sandbox = "" }, "current: sandbox: missing"},
		{"pre_head not a hash", func(j *journal) { j.PreHead = "HEAD" }, `pre_head: "HEAD" is not a commit id`},
		{"pre_head unknown", func(j *journal) { j.PreHead = strings.Repeat("1", 40) }, "pre_head: 111111111111 is not a commit of this repository"},
		{"commit_parent missing", func(j *journal) { j.Phase = phaseCommit }, `commit_parent: "" is not a commit id`},
		{"snapshot names a ledger that is not a commit", func(j *journal) { j.Refs["refs/hgate/ledger"] = "x" }, `refs: refs/hgate/ledger: "x" is not a commit id`},
	} {
		j := ok()
		tc.edit(j)
		got := anchorCheck{r.repo}.problem(j)
		if tc.want == "" && got != "" || tc.want != "" && !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
