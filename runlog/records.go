package runlog

import (
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/spend"
)

// Summary is summary.json.
type Summary struct {
	RunID       string      `json:"run_id"`
	Started     string      `json:"started"`
	Finished    string      `json:"finished,omitempty"`
	Baseline    *float64    `json:"baseline"`
	BestAtStart *float64    `json:"best_at_start"`
	Best        *float64    `json:"best"`
	Improvement float64     `json:"improvement"`
	Kept        int         `json:"kept"`
	Rejected    int         `json:"rejected"`
	Iterations  []Iteration `json:"iterations"`
	StopReason  StopReason  `json:"stop_reason"`
	StopDetail  string      `json:"stop_detail,omitempty"`
	Seconds     float64     `json:"seconds"`
	Sandbox     string      `json:"sandbox"` // "landlock ABI N", or "off": the agent ran as the user, unsandboxed
	// SpendUSD and SpendTokens are what the run spent, the agent's and the benchmark's
	// (an iteration the budget stopped before its gate included; the test split's only in
	// the summary of a stopped run); the budgets are the
	// limits it ran under, absent for none.
	SpendUSD    float64 `json:"spend_usd"`
	SpendTokens int64   `json:"spend_tokens"`
	// TestSpendUSD and TestSpendTokens are the test split's share of the spend, over the
	// whole run: only in the summary of a stopped run (while it runs, spend_usd leaves it
	// out, so that no figure the agent reads moves after each gate).
	TestSpendUSD    *float64 `json:"test_spend_usd,omitempty"`
	TestSpendTokens *int64   `json:"test_spend_tokens,omitempty"`
	BudgetUSD       *float64 `json:"budget_usd,omitempty"`
	BudgetTokens    *int64   `json:"budget_tokens,omitempty"`
	// Agents is loop.agents; Generations the generations done (loop.agents > 1).
	Agents      int `json:"agents"`
	Generations int `json:"generations,omitempty"`
	// Gateway is the model gateway's count over the run (absent when the agent's CLI was
	// not routed through it).
	Gateway *Telemetry `json:"gateway,omitempty"`
	// Final is the best's score on the sealed final split, taken when the run stopped
	// (gate.FinalScore); absent without a final split, or when no change was kept.
	Final *gate.FinalScore `json:"final,omitempty"`
}

// Outcome is how an iteration ended, as summary.json and the stream name it.
type Outcome string

// Iteration outcomes.
const (
	OutcomeKept      Outcome = "kept"      // the gate passed: committed and recorded
	OutcomeRejected  Outcome = "rejected"  // the gate rejected it: kept under its attempt ref, reverted
	OutcomeUnchanged Outcome = "unchanged" // the agent left no change
	OutcomeSetAside  Outcome = "set_aside" // the budget cut the agent's run: kept under its attempt ref, reverted, not gated
)

// Iteration is one iteration's outcome in summary.json and the JSON stream.
type Iteration struct {
	Iteration    int          `json:"iteration"`
	Outcome      Outcome      `json:"outcome"`
	Agent        AgentOutcome `json:"agent"`
	AgentDetail  string       `json:"agent_detail,omitempty"`
	Verdict      *string      `json:"verdict"` // pass, reject; null when the gate did not run
	ValScore     *float64     `json:"val_score"`
	BestBefore   *float64     `json:"best_before"`
	NewBest      bool         `json:"new_best"`
	Commit       string       `json:"commit,omitempty"`
	Message      string       `json:"message,omitempty"`
	AttemptRef   string       `json:"attempt_ref,omitempty"`
	Reasons      []string     `json:"reasons"`
	Repairs      int          `json:"repairs"`
	AgentSeconds float64      `json:"agent_seconds"`
	GateSeconds  float64      `json:"gate_seconds"`
	Seconds      float64      `json:"seconds"`
	Resumed      bool         `json:"resumed,omitempty"`
	// What the agent reported of its run (see the agentout package): the session it can
	// be resumed in, and its spend over the iteration's agent runs.
	SessionID string        `json:"session_id,omitempty"`
	CostUSD   *float64      `json:"cost_usd,omitempty"`
	Tokens    *spend.Tokens `json:"tokens,omitempty"`
	// Refused says what the agent's output showed of writes the system refused (its
	// sandbox stopping a write outside allow): "writes outside allow were refused (…)".
	Refused string `json:"refused,omitempty"`
	// Sandbox is how the agent ran in this iteration: "landlock ABI N", or "off" when it
	// ran unsandboxed in any of its attempts.
	Sandbox string `json:"sandbox"`
	// CostPriced: CostUSD is the agent's tokens at its model's loop.prices entry (codex
	// reports tokens only).
	CostPriced bool `json:"cost_priced,omitempty"`
	// Metered: CostUSD and Tokens are the model gateway's count of the agent's sessions,
	// not what the CLI reported; the CLI's own figures are CLICostUSD and CLITokens, and
	// SpendDisagreement says where the two differ by more than 2% or $0.01.
	Metered           bool          `json:"metered,omitempty"`
	CLICostUSD        *float64      `json:"cli_cost_usd,omitempty"`
	CLITokens         *spend.Tokens `json:"cli_tokens,omitempty"`
	SpendDisagreement string        `json:"spend_disagreement,omitempty"`
	// SpendOpen: a model response was cut (hgate killed mid-stream) and is counted up to
	// its last usage event: the spend is an upper bound, not the provider's final word.
	SpendOpen bool `json:"spend_open,omitempty"`
	// BudgetCut: the gateway refused the agent's model request on the budget; the
	// attempt was set aside, not gated, and the run stopped.
	BudgetCut string `json:"budget_cut,omitempty"`
	// What the benchmark reported it spent on the iteration's gates (gate.Answer's spend).
	BenchCostUSD *float64 `json:"bench_cost_usd,omitempty"`
	BenchTokens  int64    `json:"bench_tokens,omitempty"`
	// The iteration's spend, the agent's and the benchmark's, and the run's up to its end.
	SpendUSD         float64 `json:"spend_usd"`
	SpendTokens      int64   `json:"spend_tokens"`
	CumulativeUSD    float64 `json:"cumulative_usd"`
	CumulativeTokens int64   `json:"cumulative_tokens"`
	// Harness is what the harness phases did (loop.harness.enabled); nil without them.
	Harness *HarnessOutcome `json:"harness,omitempty"`
	// With loop.agents > 1: the generation and the agent (1..N) whose candidate this is,
	// the commit it started from, the commit it was gated against (the best as it stood
	// at its turn), and whether it was rebased onto that commit first.
	Generation   int    `json:"generation,omitempty"`
	AgentIndex   int    `json:"agent_index,omitempty"`
	Base         string `json:"base,omitempty"`
	ComparedWith string `json:"compared_with,omitempty"`
	Rebased      bool   `json:"rebased,omitempty"`
	// Row is the results.tsv row a kept iteration recorded (its "iteration" column: the
	// row number, baseline 0), which differs from the run's iteration number.
	Row int `json:"row,omitempty"`
}

// AgentOutcome is how the agent's run ended, as summary.json and the stream name it.
type AgentOutcome string

// Agent outcomes.
const (
	AgentOK          AgentOutcome = "ok"          // exited 0
	AgentCrashed     AgentOutcome = "crashed"     // exited non-zero, was killed by a signal, or did not start
	AgentTimeout     AgentOutcome = "timeout"     // stopped at attempt_timeout or the run's deadline
	AgentInterrupted AgentOutcome = "interrupted" // stopped by SIGINT/SIGTERM, or hgate died while it ran
)

// HarnessOutcome is what the harness phases did in an iteration, in summary.json.
type HarnessOutcome struct {
	// Active names the tools the iteration's agent runs were given; Hidden counts the
	// quarantined artifacts it was not shown.
	Active []string `json:"active"`
	Hidden int      `json:"quarantined_hidden"`
	// Reflection is the agent's answer to the reflect phase, as it wrote it ("" = none).
	Reflection string `json:"reflection,omitempty"`
	// Phases are the agent runs of the harness phases, in order.
	Phases []PhaseRun `json:"phases"`
	// Qualifications are the reports of this iteration's qualifications, in order.
	Qualifications []string `json:"qualifications"`
	// Qualified and Quarantined are the artifacts' paths as the last qualification left
	// them in the registry.
	Qualified   []string `json:"qualified"`
	Quarantined []string `json:"quarantined"`
	// Skipped says why phases did not run ("" = all ran).
	Skipped string `json:"skipped,omitempty"`
	// Calls is the number of tools/call lines the agent's proxies logged for this iteration.
	Calls int `json:"mcp_calls"`
}

// PhaseRun is one harness phase's agent run.
type PhaseRun struct {
	Phase   string       `json:"phase"` // reflect, build, artifact_repair_<k>
	Agent   AgentOutcome `json:"agent"`
	Detail  string       `json:"detail,omitempty"`
	Seconds float64      `json:"seconds"`
}

// StopReason is why a run stopped, as summary.json names it.
type StopReason string

// Stop reasons.
const (
	StopNone        StopReason = ""        // the run goes on
	StopRunning     StopReason = "running" // summary.json written between iterations
	StopIterations  StopReason = "iterations"
	StopPatience    StopReason = "patience"
	StopScore       StopReason = "stop_score"
	StopDeadline    StopReason = "deadline"
	StopInterrupted StopReason = "interrupted"
	StopCrashes     StopReason = "max_consecutive_crashes"
	StopBudget      StopReason = "budget" // loop.budget_usd or loop.budget_tokens spent
	StopError       StopReason = "error"
)

// SandboxOff is summary.json's "sandbox" for a run whose agent ran unsandboxed.
const SandboxOff = "off"

// Telemetry is what the model gateway counted over a run: tokens by kind, dollars,
// requests, refusals (budget ones apart), the provider's errors and of those the ones
// the CLIs retry, by phase and in total.
type Telemetry struct {
	Phases map[string]gatewayapi.Scope `json:"phases"`
	Total  gatewayapi.Scope            `json:"total"`
}
