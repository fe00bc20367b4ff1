package loop

import (
	"math"
	"os"
	"strings"

	"github.com/hgate/hgate/agentcli"
	"github.com/hgate/hgate/agentout"
)

// readAgentOutput reads what the agent printed about its run, as its CLI's adapter reads
// it: stdout (claude's stream-json, codex's JSON Lines, a custom agent's HGATE_ lines),
// then stderr, where a custom agent may print its HGATE_ lines too.
func readAgentOutput(cli agentcli.CLI, stdout, stderr string) agentout.Run {
	var run agentout.Run
	for _, p := range []string{stdout, stderr} {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		r, _ := cli.Parse(f)
		f.Close()
		if run.Format == agentout.FormatNone {
			run = r
			continue
		}
		// stderr adds a custom agent's lines, and what was refused, to what stdout said.
		if run.Refused.Count == 0 {
			run.Refused = r.Refused
		} else {
			run.Refused.Count += r.Refused.Count
		}
		if r.SessionID != "" && run.SessionID == "" {
			run.SessionID = r.SessionID
		}
		if r.CostUSD != nil && run.Format == agentout.FormatLines {
			if run.CostUSD == nil {
				run.CostUSD = new(float64)
			}
			*run.CostUSD += *r.CostUSD
		}
	}
	return run
}

// judge maps what the agent's output says to its outcome: a program the shell could not
// find or execute (exit 127 or 126, sh -c's "not found"), and an agent CLI that reported
// a failure before doing any work (claude's "Not logged in", a codex turn refused with
// 401), did not start, in the agent's own words; an agent that exited 0 but reported a
// failure crashed; a crash the agent reported says its words after the exit status.
func judge(res agentResult, out agentout.Run, stderr string) agentResult {
	if res.Outcome != AgentOK && res.Outcome != AgentCrashed || strings.HasPrefix(res.Detail, notStarted) {
		return res
	}
	if res.ExitCode == 126 || res.ExitCode == 127 {
		why := lastLine(tail(stderr, 4096))
		if why == "(none yet)" {
			why = res.Detail
		}
		res.Outcome, res.Detail = AgentCrashed, notStarted+why
		return res
	}
	if why, ok := out.NotStarted(); ok {
		res.Outcome, res.Detail = AgentCrashed, notStarted+firstLine(why)
		return res
	}
	switch {
	case out.Failed && res.Outcome == AgentOK:
		res.Outcome, res.Detail = AgentCrashed, "exited 0 but reported an error: "+firstLine(out.Message)
	case out.Failed && out.Message != "":
		// claude and codex say why on stdout, in their JSON, not on stderr.
		res.Detail += ": " + firstLine(out.Message)
	}
	return res
}

// didNotStart reports whether an agent outcome's detail says it did not start.
func didNotStart(detail string) bool { return strings.HasPrefix(detail, notStarted) }

// addSpend adds one agent run's spend to the iteration's.
func addSpend(it *Iteration, out agentout.Run) {
	if out.SessionID != "" {
		it.SessionID = out.SessionID
	}
	if out.CostUSD != nil {
		if it.CostUSD == nil {
			it.CostUSD = new(float64)
		}
		// Summed in millionths of a dollar: 0.01 + 0.02 reads 0.03, not 0.030000000000000002.
		*it.CostUSD = math.Round((*it.CostUSD+*out.CostUSD)*1e6) / 1e6
	}
	if t := out.Tokens; t.Total() > 0 {
		if it.Tokens == nil {
			it.Tokens = &agentout.Tokens{}
		}
		it.Tokens.Input += t.Input
		it.Tokens.Output += t.Output
		it.Tokens.CacheRead += t.CacheRead
		it.Tokens.CacheWrite += t.CacheWrite
	}
}

// describeLast is the agent's last output line as the progress line shows it.
func describeLast(stdout string) string {
	return agentout.Describe(lastLine(tail(stdout, 64<<10)))
}
