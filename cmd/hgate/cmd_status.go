package main

import (
	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
)

// statusCmd prints what the agent may know. Inside the loop's sandbox it is
// forwarded, and the loop answers with the iteration and run id too.
type statusCmd struct{}

func (c *statusCmd) Run(g *Globals, cfg *config.Config) error {
	st, err := statusOf(cfg)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.printJSON(st)
	}
	st.WriteText(g.stdout)
	return nil
}

// statusOf is what hgate status prints: gate.Standing and the allowlist.
func statusOf(cfg *config.Config) (agentapi.Status, error) {
	best, size, err := gate.Standing(cfg)
	return agentapi.Status{Allow: cfg.Allow, Best: best, SuiteSize: size}, err
}
