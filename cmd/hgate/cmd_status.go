package main

import (
	"context"
	"fmt"

	"github.com/hgate/hgate/agentapi"
	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
)

// statusCmd prints what the agent may know. Inside the loop's sandbox it is
// forwarded, and the loop answers with the iteration and run id too.
type statusCmd struct{}

func (c *statusCmd) Run(ctx context.Context, g *Globals, cfg *config.Config, repo *gitguard.Repo) error {
	st, err := statusOf(cfg, repo)
	if err != nil {
		return err
	}
	// The final split is the user's: added here, outside the loop (statusOf is also what
	// the loop serves the agent): its last score, or why there is none.
	fs, noFinal, err := finalOfStatus(ctx, g, cfg, repo)
	if err != nil {
		return err
	}
	if g.JSON {
		return g.printJSON(struct {
			agentapi.Status
			Final   *gate.FinalScore `json:"final,omitempty"`
			NoFinal string           `json:"no_final,omitempty"`
		}{st, fs, noFinal})
	}
	st.WriteText(g.stdout)
	if fs != nil {
		writeFinal(g.stdout, fs)
	}
	if noFinal != "" {
		fmt.Fprintf(g.stdout, "final: none: %s\n", noFinal)
	}
	return nil
}

// finalOfStatus is the final split's part of hgate status: the last score, the showing
// counted in the ledger when the lock is free (lockToShow), or why there is no split.
func finalOfStatus(ctx context.Context, g *Globals, cfg *config.Config, repo *gitguard.Repo) (*gate.FinalScore, string, error) {
	release, locked, err := g.lockToShow(ctx, repo, "status")
	if err != nil {
		return nil, "", err
	}
	defer release()
	fs, err := gate.ShowFinal(repo, cfg.WorkspaceDir(), "hgate status", locked)
	if err != nil || fs != nil {
		return fs, "", err
	}
	why, err := gate.NoFinalReason(cfg, repo)
	return nil, why, err
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
