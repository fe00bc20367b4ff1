package main

import (
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/hooks"
	"github.com/hgate/hgate/loop"
)

// The --json objects of the commands whose report belongs to no package of its own (gate,
// record, bench, prepare and state rebase print gate's, state log ledger's, status
// agentapi.Status). Fields are declared in the order they print; they may be added,
// never renamed (README, "JSON report"). reports_test.go pins every command's keys.

// stateFilesJSON is hgate state restore --json and state accept --json.
type stateFilesJSON struct {
	Files []string `json:"files"`
}

// nonNil makes an absent list print as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// loopJSON is the last line hgate loop --json prints, after the streamed events.
type loopJSON struct {
	Summary *loop.Summary `json:"summary"`
}

// hooksJSON is hgate hooks install --json and hooks uninstall --json.
type hooksJSON struct {
	Hooks []hooks.Result `json:"hooks"`
}

// hookRunJSON is hgate hooks run pre-commit --json.
type hookRunJSON struct {
	OK         bool                 `json:"ok"`
	Violations []gitguard.Violation `json:"violations"`
}

// guardJSON is hgate guard --json, gate's: the MCP server renders its text too.
type guardJSON = gate.GuardJSON

// errorJSON is what --json prints when a command could not answer or was interrupted
// before printing its own object.
type errorJSON struct {
	Error string `json:"error"`
	Exit  int    `json:"exit"`
}
