package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/agentout"
	"github.com/hgate/hgate/benchmark"
	"github.com/hgate/hgate/check"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/hooks"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/loop"
	"github.com/hgate/hgate/record"
)

// TestJSONKeys pins the keys, and their order, of every command's --json object: fields
// may be added (then add them here and to the README's "JSON report"), never renamed or
// reordered. Optional fields are set, so that they show.
func TestJSONKeys(t *testing.T) {
	x, hash := 0.5, plumbing.NewHash("0123456789012345678901234567890123456789")
	// The model gateway's count of a phase, every field set.
	gwScope := gatewayapi.Scope{Budget: 1, Unpriced: true, Open: 1}
	gwKeys := "{tokens:{input output cache_read cache_write} usd requests refused budget errors retried unpriced open}"
	violation := []gitguard.Violation{{Path: "a", Kind: "modified", Detail: "d", Hint: "h"}}
	finalScore := &gate.FinalScore{ID: "0123456789abcdef", Pending: 1, Labels: []gate.LabelScore{{Train: gate.SplitScore{Best: &x, Baseline: &x}, Test: gate.SplitScore{Best: &x, Baseline: &x},
		Final: gate.SplitScore{Best: &x, Baseline: &x}}}}
	tests := []struct {
		command string
		report  any
		keys    string
	}{
		{"gate", &gate.Answer{Steps: gate.Steps{Step0: &gate.Step0{Violations: violation}, Step1: &gate.Step1{LetThrough: []string{"t"}, StoppedEarly: true, Traces: "t"},
			Step2: &gate.Step2{StoppedEarly: true, ScoredAt: "s", Trials: 2, Flaky: new(int), Confidence: x, Margin: x, Delta: &x, Interval: []float64{x}, NewBest: true, Replicated: true},
			Step3: &gate.Step3{Flaky: []string{"t"}}}, Spend: &benchmark.Spend{}, Interrupted: "step 3"},
			"{verdict tree head val_score best steps:{step0:{ok skipped violations:[{path kind detail hint}]} " +
				"step1:{ok skipped passed total threshold failed let_through stopped_early traces} " +
				"step2:{ok val_score best tasks nulls stopped_early cached scored_at trials flaky confidence margin delta interval new_best replicated} " +
				"step3:{ran rerun promoted flaky failed}} reasons spend:{cost_usd input_tokens cache_tokens output_tokens} interrupted}"},
		{"record", (&gate.RecordReport{Row: record.Row{}}).JSON(),
			"{already commit evals_passed evals_total iteration new_best val_score}"},
		{"bench", (&gate.BenchReport{Tasks: []string{"t1"}, Results: map[string]benchmark.Result{"t1": {Reward: &x}}}).JSON(),
			"{full passed results:{t1:{passed reason reward}} total}"},
		{"prepare", (&gate.PrepareReport{Trials: &gate.TrialsSetting{Tasks: new(int), Differing: new(int)}, Final: 30}).JSON(nil),
			"{created excluded final passed tasks test train trials:{auto min max margin tasks differing} val_score}"},
		{"prepare --reset", (&gate.PrepareReport{}).JSON(&gate.ResetReport{ResetReport: &ledger.ResetReport{}}),
			"{created excluded passed reset:{entry gated previous previous_best previous_gated removed} tasks test train val_score}"},
		{"state log", ledger.LogJSONOf([]gitguard.RefEntry{{}}),
			"{entries:[{changed commit message time}]}"},
		{"state restore, state accept", stateFilesJSON{}, "{files}"},
		{"state rebase", (&gate.RebaseReport{Best: hash, Carry: []ledger.CarriedEntry{{SHA256: "s", Link: "l"}}}).JSON(),
			"{best best_restored carry:[{path mode sha256 link}] gated previous}"},
		{"final", finalScore,
			"{id time by commit tree tasks trials baseline_final best_final final_gain:{mean low high se n} val_gain:{mean low high se n} gap:{mean low high se n} " +
				"labels:[{label value train:{tasks best baseline} test:{tasks best baseline} final:{tasks best baseline}}] scored shown shown_pending}"},
		{"loop", loopJSON{Summary: &loop.Summary{Final: finalScore, Finished: "f", StopDetail: "d", BudgetUSD: &x, BudgetTokens: new(int64), TestSpendUSD: &x, TestSpendTokens: new(int64), Generations: 1,
			Iterations: []loop.Iteration{{AgentDetail: "d", Commit: "c", Message: "m", AttemptRef: "a", Resumed: true,
				SessionID: "s", CostUSD: &x, Tokens: &agentout.Tokens{}, CostPriced: true, BenchCostUSD: &x, BenchTokens: 1,
				Generation: 1, AgentIndex: 1, Base: "b", ComparedWith: "c", Rebased: true, Row: 1,
				Metered: true, CLICostUSD: &x, CLITokens: &agentout.Tokens{}, SpendDisagreement: "d", SpendOpen: true, BudgetCut: "b"}},
			Gateway: &loop.Telemetry{Phases: map[string]gatewayapi.Scope{"attempt": gwScope}, Total: gwScope}}},
			"{summary:{run_id started finished baseline best_at_start best improvement kept rejected " +
				"iterations:[{iteration outcome agent agent_detail verdict val_score best_before new_best commit message attempt_ref reasons repairs agent_seconds gate_seconds seconds resumed " +
				"session_id cost_usd tokens:{input output cache_read cache_write} sandbox cost_priced " +
				"metered cli_cost_usd cli_tokens:{input output cache_read cache_write} spend_disagreement spend_open budget_cut " +
				"bench_cost_usd bench_tokens spend_usd spend_tokens cumulative_usd cumulative_tokens " +
				"generation agent_index base compared_with rebased row}] " +
				"stop_reason stop_detail seconds sandbox spend_usd spend_tokens test_spend_usd test_spend_tokens budget_usd budget_tokens agents generations " +
				"gateway:{phases:{attempt:" + gwKeys + "} total:" + gwKeys + "} " +
				"final:{id time by commit tree tasks trials baseline_final best_final final_gain:{mean low high se n} val_gain:{mean low high se n} gap:{mean low high se n} " +
				"labels:[{label value train:{tasks best baseline} test:{tasks best baseline} final:{tasks best baseline}}] scored shown shown_pending}}}"},
		{"hooks install, hooks uninstall", hooksJSON{Hooks: []hooks.Result{{Manager: "m", Kept: "k", Configured: true}}},
			"{hooks:[{hook path action manager kept configured}]}"},
		{"hooks run", hookRunJSON{Violations: violation}, "{ok violations:[{path kind detail hint}]}"},
		{"guard", guardJSON{Violations: violation}, "{file_guard ok violations:[{path kind detail hint}]}"},
		{"check", check.Report{Checks: []check.Result{{Lines: []string{"l"}}}}, "{checks:[{level status lines}] exit}"},
		{"status", agentapi.Status{Iteration: 1, RunID: "r", Trials: &agentapi.Trials{Tasks: new(int), Differing: new(int)}},
			"{iteration run_id best_val_score suite_size allow trials:{auto min max margin tasks differing}}"},
		{"any command that could not answer", errorJSON{}, "{error exit}"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		g := &Globals{stdout: &out}
		if err := g.printJSON(tt.report); err != nil {
			t.Fatal(err)
		}
		if got := jsonShape(t, out.Bytes()); got != tt.keys {
			t.Errorf("hgate %s --json keys:\n got %s\nwant %s", tt.command, got, tt.keys)
		}
	}
}

// jsonShape lists an object's keys in the order printed, with the keys of nested objects
// and of a list's first object.
func jsonShape(t *testing.T, data []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	var b strings.Builder
	var value func()
	value = func() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		switch tok {
		case json.Delim('{'):
			b.WriteString("{")
			for i := 0; dec.More(); i++ {
				k, _ := dec.Token()
				if i > 0 {
					b.WriteString(" ")
				}
				fmt.Fprint(&b, k)
				mark := b.Len()
				b.WriteString(":")
				value()
				if b.Len() == mark+1 { // a scalar: just the key
					s := b.String()[:mark]
					b.Reset()
					b.WriteString(s)
				}
			}
			dec.Token()
			b.WriteString("}")
		case json.Delim('['):
			mark := b.Len()
			b.WriteString("[")
			for i := 0; dec.More(); i++ {
				if i == 0 {
					value()
				} else {
					var skip json.RawMessage
					dec.Decode(&skip)
				}
			}
			dec.Token()
			if b.Len() == mark+1 { // a list of scalars, or empty
				s := b.String()[:mark]
				b.Reset()
				b.WriteString(s)
			} else {
				b.WriteString("]")
			}
		}
	}
	value()
	return b.String()
}
