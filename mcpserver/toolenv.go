package mcpserver

import (
	"os"
	"strings"
)

// toolEnv is the environment an agent-built MCP server or its self-test starts with,
// the same whether hgate qualifies it (smoke, selftest) or an agent uses it (proxy):
// this process's, less every variable hgate sets — HGATE_SPLIT=qualify, HGATE_TASK,
// HGATE_TRIAL and the trace folder in qualification; HGATE_ITERATION, HGATE_PHASE, the
// loop's socket and the activation's CODEX_HOME in use — so that nothing hgate adds
// tells the tool which of the two it is in. (What the room itself differs in — a
// private HOME and TMPDIR, the gated commit's tree — a tool can still see: qualification
// is a smoke test of the bytes that run, not a proof of their behaviour.)
func toolEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "HGATE_") || name == "CODEX_HOME" {
			continue
		}
		out = append(out, kv)
	}
	return out
}
