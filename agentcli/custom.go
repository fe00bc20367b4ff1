package agentcli

// Custom is any other agent: a command line loop.agent gives whole. hgate cannot resume
// it (it gets the session in HGATE_RESUME_SESSION) and gives it the active tools only in
// the environment (HGATE_MCP_CONFIG, HGATE_SKILLS_DIR); its output is read for the
// HGATE_SESSION= and HGATE_COST_USD= lines (or claude's or codex's JSON, if it runs one).
type Custom struct {
	Base
	Argv []string
}

// Name implements CLI: a custom command has no name of its own.
func (Custom) Name() string { return "" }

// Args implements CLI.
func (c Custom) Args() []string { return c.Argv }
