package gate

import (
	"fmt"
	"strings"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/internal/statefile"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/workspace"
)

// A baseline is only comparable with scores taken under the configuration it was taken
// under (config.Measured): prepare records it in baseline.json, and every command that
// runs the benchmark or judges by the baseline stops when the configuration it reads
// differs. The way on is a new baseline, never a quiet comparison across rules.

// resetAdvice is the way on from a changed benchmark configuration.
const resetAdvice = "a baseline is only comparable with scores taken under the configuration it was taken under: run `hgate prepare --reset` to take a new baseline and split under this one (the old state stays in `hgate state log`)"

// recordedMeasured is the configuration the baseline was taken under, as the ledger l
// holds baseline.json (of workspace ws); nil with prepared true for a workspace an older
// hgate prepared, which did not record it.
func recordedMeasured(l *ledger.Ledger, ws workspace.Dir) (m *config.Measured, prepared bool, err error) {
	data, err := l.File(workspace.Baseline)
	if err != nil {
		return nil, false, err
	}
	if data != nil {
		var b Baseline
		if err := statefile.DecodeJSON(ws.Path(workspace.Baseline), data, &b); err != nil {
			return nil, false, err
		}
		if b.Config != nil {
			return b.Config, true, nil
		}
	}
	sp, err := l.File(workspace.Split)
	return nil, sp != nil, err
}

// measuredCheck compares a configuration with the one the baseline was taken under.
type measuredCheck struct{ *Env }

// checkMeasured stops when cfg, read from where ("hgate.yaml at HEAD 1a2b3c4"), is not
// the configuration the baseline was taken under.
func (c measuredCheck) checkMeasured(cfg *config.Config, where, refusal string) error {
	rec, _, err := recordedMeasured(c.ledger(), c.ws())
	if err != nil || rec == nil {
		return err
	}
	diff := rec.Diff(cfg.Measured())
	if len(diff) == 0 {
		return nil
	}
	return &ConfigChanged{Refusal: refusal, Where: where, Diff: diff}
}

// ConfigChanged is the refusal of a command whose hgate.yaml is not the benchmark
// configuration the baseline was taken under.
type ConfigChanged struct {
	Refusal string   // the command's own words before it ("state rebase refused: ")
	Where   string   // "hgate.yaml at HEAD 1a2b3c4"
	Diff    []string // each changed key, "key: old → new"
}

func (e *ConfigChanged) Error() string {
	return fmt.Sprintf("%s%s changes the benchmark configuration the baseline was taken under (recorded in the ledger by hgate prepare):\n  %s\n%s",
		e.Refusal, e.Where, strings.Join(e.Diff, "\n  "), resetAdvice)
}

// Problems, About and Fix let a refusal name the change with the one fix once.
func (e *ConfigChanged) About() string { return "hgate.yaml" }
func (e *ConfigChanged) Problems() []string {
	return []string{e.Where + " changes the benchmark configuration the baseline was taken under (" + strings.Join(e.Diff, "; ") + ")"}
}
func (e *ConfigChanged) Fix() string {
	return "hgate prepare --reset, for a new baseline and split under it"
}

// checkConfig is checkMeasured for the configuration the command reads (hgate.yaml as of
// the gated commit).
func (c measuredCheck) checkConfig() error {
	return c.checkMeasured(c.Config, c.Config.File+" as hgate reads it (from the gated commit)", "")
}

// checkHead is checkMeasured for hgate.yaml as HEAD has it, when HEAD is not the gated
// commit: a human who committed a new benchmark command learns from prepare and bench that
// it needs a new baseline, rather than seeing the old command run on. (The gate leaves a
// commit since the gated one to Step 0, which rejects it: the agent may have made it.) A
// HEAD whose hgate.yaml cannot be read is left to the drift warning.
func (c measuredCheck) checkHead() error {
	head, _, err := c.Repo.Head()
	if err != nil {
		return nil
	}
	gated, err := gatedBase(c.Repo)
	if err != nil || gated == head || gated.IsZero() {
		return err
	}
	cfg, err := configAt(c.Repo, head, c.Config.File)
	if err != nil {
		return nil
	}
	return c.checkMeasured(cfg, fmt.Sprintf("%s at HEAD %s", c.Config.File, head.String()[:7]), "")
}

// noteUnrecorded says, for a workspace an older hgate prepared, that a change of the
// benchmark configuration goes unnoticed until a reset records it.
func (c measuredCheck) noteUnrecorded() error {
	rec, prepared, err := recordedMeasured(c.ledger(), c.ws())
	if err != nil || rec != nil || !prepared {
		return err
	}
	fmt.Fprintln(c.log(), "hgate: note: this workspace was prepared by an older hgate, which did not record the benchmark configuration of its baseline: a change of benchmark, clean_room or split in "+c.Config.File+" goes unnoticed (hgate prepare --reset records it)")
	return nil
}
