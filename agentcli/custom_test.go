package agentcli

import (
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/agentout"
)

// TestCustom: an agent no adapter names is a custom command: one string with a space runs
// by sh -c, one word or a vector as it is; it gets nothing of a CLI's own, and its
// HGATE_ lines are read.
func TestCustom(t *testing.T) {
	for _, tc := range []struct {
		agent []string
		want  []string
	}{
		{[]string{"sh bot.sh {prompt_file}"}, []string{"sh", "-c", "sh bot.sh p.txt"}},
		{[]string{"./bot"}, []string{"./bot"}},
		{[]string{"claude", "-p"}, []string{"claude", "-p"}}, // a vector is never a preset
	} {
		c := For(tc.agent)
		if got := Command(c, "p.txt"); c.Name() != "" || !slices.Equal(got, tc.want) {
			t.Errorf("For(%q) = %q %q, want a custom %q", tc.agent, c.Name(), got, tc.want)
		}
		if c.Writable() != nil || c.Env(true, "/t") != nil || c.Unsandboxed([]string{"x"})[0] != "x" {
			t.Errorf("custom %q given a CLI's adjustments", tc.agent)
		}
	}
	run, err := For([]string{"./bot"}).Parse(strings.NewReader("HGATE_SESSION=s9\nHGATE_COST_USD=0.5\n"))
	if err != nil || run.Format != agentout.FormatLines || run.SessionID != "s9" || *run.CostUSD != 0.5 {
		t.Errorf("custom output: %+v %v", run, err)
	}
	if names := Names(); !slices.Equal(names, []string{"aider", "claude", "codex"}) {
		t.Errorf("registered: %q", names)
	}
}
