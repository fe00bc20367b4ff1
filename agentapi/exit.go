package agentapi

// exitNo is hgate's "the answer is no" (README, "Exit codes").
const exitNo = 1

// ExitMeaning says what an exit code of an hgate command means, for a message that has
// nothing better to say: the CLI's --json error object, the MCP tools' last line.
func ExitMeaning(code int) string {
	switch code {
	case exitNo:
		return "the answer is no"
	case exitInterrupted:
		return "interrupted"
	}
	return "could not answer"
}
