package main

import (
	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
)

// statusCmd prints what the agent may know. Inside the loop's sandbox it is
// forwarded, and the loop answers with the iteration and run id too.
type statusCmd struct{}

func (c *statusCmd) Run(g *Globals, cfg *config.Config, repo *gitguard.Repo) error {
	st, err := statusOf(cfg, repo)
	if err != nil {
		return err
	}
	// The final split's score is the user's: added here, outside the loop (statusOf is
	// also what the loop serves the agent), and only when the split was scored.
	fs, err := gate.ShowFinal(repo, "hgate status")
	if err != nil {
		return err
	}
	if g.JSON {
		if fs != nil {
			return g.printJSON(struct {
				agentapi.Status
				Final *gate.FinalScore `json:"final"`
			}{st, fs})
		}
		return g.printJSON(st)
	}
	st.WriteText(g.stdout)
	if fs != nil {
		writeFinal(g.stdout, fs)
	}
	return nil
}

// statusOf is what hgate status prints: gate.Standing and the allowlist.
func statusOf(cfg *config.Config, repo *gitguard.Repo) (agentapi.Status, error) {
	best, size, err := gate.Standing(cfg, repo)
	st := agentapi.Status{Allow: cfg.Allow, SuiteSize: size}
	if best != nil {
		st.Best, st.BestInterval = &best.ValScore, best.Interval
	}
	if err != nil {
		return st, err
	}
	t, err := gate.TrialsOf(cfg, repo)
	st.Trials = trialsText(t)
	return st, err
}

// trialsText is gate's trials setting as agentapi prints it.
func trialsText(t *gate.TrialsSetting) *agentapi.Trials {
	if t == nil {
		return nil
	}
	a := agentapi.Trials(*t)
	return &a
}
