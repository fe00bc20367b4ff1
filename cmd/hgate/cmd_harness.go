package main

import (
	"fmt"
	"path/filepath"

	"github.com/hgate/hgate/gate"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/harness"
)

// harnessCmd shows the tools the agent built for itself, as hgate judged them.
type harnessCmd struct {
	List harnessListCmd `cmd:"" help:"List the agent's tools with their standing: qualified, quarantined (with the reason), or changed since they were judged."`
}

type harnessListCmd struct{}

// harnessListJSON is hgate harness list --json.
type harnessListJSON struct {
	UpdatedAt *string          `json:"updated_at"` // null before the first qualification
	Commit    *string          `json:"commit"`     // the refs/hgate/harness commit judged
	Artifacts []listedArtifact `json:"artifacts"`
}

type listedArtifact struct {
	harness.Entry
	// Changed: the folder is not what was judged; the next qualification judges it again.
	Changed bool `json:"changed"`
}

func (c *harnessListCmd) Run(g *Globals, env *gate.Env) error {
	reg, err := env.Registry()
	if err != nil {
		return err
	}
	out := harnessListJSON{Artifacts: []listedArtifact{}}
	if reg != nil {
		out.UpdatedAt, out.Commit = &reg.UpdatedAt, &reg.Commit
		dir := filepath.Join(env.Repo.Root(), filepath.FromSlash(env.Config.Loop.Harness.Dir))
		for _, en := range reg.Artifacts {
			now, err := harness.ContentHash(dir, en.Path)
			out.Artifacts = append(out.Artifacts, listedArtifact{Entry: en, Changed: err != nil || now != en.Content})
		}
	}
	if g.JSON {
		return g.printJSON(out)
	}
	if reg == nil {
		fmt.Fprintf(g.stdout, "no qualification yet: run hgate qualify\n")
		return nil
	}
	for _, a := range out.Artifacts {
		line := fmt.Sprintf("%-11s  %s %s (%s)", a.Status, a.Kind, a.Name, a.Path)
		if a.Reason != "" {
			line += ": " + a.Reason
		}
		if a.Changed {
			line += " [changed since: judged again by the next qualification]"
		}
		fmt.Fprintln(g.stdout, line)
	}
	fmt.Fprintf(g.stdout, "judged %s; artifacts as judged: %s %s\n", reg.UpdatedAt, gitguard.HarnessRef, reg.Commit[:min(7, len(reg.Commit))])
	return nil
}
