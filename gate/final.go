package gate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hgate/hgate/internal/fsafe"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hgate/hgate/finalscore"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/digest"
	"github.com/hgate/hgate/internal/fault"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/split"
	"github.com/hgate/hgate/suite"
	"github.com/hgate/hgate/workspace"
)

// The sealed final split (split.Plan's final share) is scored for the user alone: at the
// end of a loop run and by `hgate final`, never by a gate, an agent or hgate bench. Which
// tasks are final and every score of it live in the held-out folder (heldout.go), which
// every agent sandbox hides: split.json lists the final ids among the test ids and names
// the baseline's final record by its keyed digest (openSplit tells them apart), and each
// scoring appends to final/scores.jsonl there. Every scoring and every showing
// of a score is counted in the ledger (finallooks.go).

// MinFinal is the fewest tasks a final split holds; prepare makes none smaller.
const MinFinal = 30

// FinalDir is the final split's folder inside the held-out folder.
const FinalDir = "final"

// FinalScore is one scoring of the run's best on the final split.
type FinalScore struct {
	ID     string `json:"id,omitempty"` // the look's id, in the ledger commit that counts it
	Time   string `json:"time"`
	By     string `json:"by"`     // "hgate final" or "loop run <id>"
	Commit string `json:"commit"` // refs/hgate/best
	Tree   string `json:"tree"`   // its tree
	Tasks  int    `json:"tasks"`  // final tasks
	Trials int    `json:"trials"` // trials per task, as prepare chose
	// BaselineFinal and BestFinal are the mean rewards over the final tasks.
	BaselineFinal float64 `json:"baseline_final"`
	BestFinal     float64 `json:"best_final"`
	// FinalGain is best − baseline on the final split, ValGain the same on the test split
	// (where the best was chosen), Gap is ValGain − FinalGain: the overfitting the
	// choosing bought. Each with its 95% interval.
	FinalGain finalscore.Interval `json:"final_gain"`
	ValGain   finalscore.Interval `json:"val_gain"`
	Gap       finalscore.Interval `json:"gap"`
	// Labels is each label value's scores on train, test and final, rare values pooled
	// (finallabels.go): for the user alone.
	Labels []LabelScore `json:"labels,omitempty"`
	// Scored is how many times the final split has been scored, this one included, and
	// Shown how many times a command showed a score, as the ledger counts them (filled
	// when read); Pending, showings not yet in the ledger (finallooks.go).
	Scored  int `json:"scored"`
	Shown   int `json:"shown"`
	Pending int `json:"shown_pending,omitempty"`
}

// finalDir is e's final folder.
func finalDir(repo *gitguard.Repo) string { return filepath.Join(HeldOut(repo), FinalDir) }

// finalTrials is prepare's phase for a new split with a final share: the baseline's final
// trials (the first from the baseline's run unless the rooms scope the test split, then
// up to trials.max in the test lane), sealed in the held-out folder; split.json keeps
// the record's digest and the count, and the final ids only among the test ids.
func (p *prep) finalTrials(ctx context.Context) error {
	if p.st.split != nil {
		return nil
	}
	if err := keepLabels(p.e.Repo, p.labels); err != nil {
		return err
	}
	if len(p.sp.Final) == 0 {
		return nil
	}
	e, ids := p.e, p.sp.Final
	t := Trials{}
	first := 1
	if p.lanes == nil || !e.rooms().TestScoped() {
		t.add(ids, p.out.Results)
		first = 2
	}
	if p.rm != nil {
		if err := (trialRunner{e, p.rm, nil}).run(ctx, ids, first, e.Config.Gate.TrialsMax, "baseline, final trial %d", nil, t); err != nil {
			return err
		}
	}
	sum, err := sealTrials(heldOut(e), t)
	if err != nil {
		return err
	}
	p.rep.Final = len(ids)
	// split.json lists the final ids among the test ids (split.FormatSealed): only the
	// record tells them apart.
	p.sp.FinalSHA, p.sp.FinalTasks = sum, len(ids)
	return p.c.add(workspace.Split, p.sp.Marshal)
}

// finalScoring is the final split's scoring of the best: the baseline's final trials, the
// best's, their comparison, and the look kept.
type finalScoring struct{ *Env }

// openSplit reads split.json at path and unseals it: the final ids are the keys of the
// baseline's final trials, the record its final_sha names in v, and they are taken out of
// the test list the file shows the agent (split.FormatSealed), so that Test is the test
// split alone. Every reader of the test split in hgate goes through it. A record that is
// missing, or does not match its digest or the file, is an error naming both.
func openSplit(v vault, path string) (*split.Split, error) {
	sp, _, err := unsealed(v, path)
	return sp, err
}

// unsealed is openSplit, and the baseline's final trials it read (nil without a final
// split).
func unsealed(v vault, path string) (*split.Split, Trials, error) {
	sp, err := split.Load(path)
	if err != nil || sp.FinalSHA == "" {
		return sp, nil, err
	}
	t, err := openTrials(v, path, sp.FinalSHA)
	if err != nil {
		return nil, nil, err
	}
	if err := sp.Unseal(slices.Collect(maps.Keys(t))); err != nil {
		return nil, nil, fmt.Errorf("%s: %w (held-out record %s); take a new baseline with `hgate prepare --reset`", path, err, filepath.Join(v.dir, digest.Hex(sp.FinalSHA)+".json"))
	}
	return sp, t, nil
}

// baseline is the baseline's final trials (their keys are the final ids); nil when
// the workspace has no final split. The record is read once, with the split it unseals.
func (f finalScoring) baseline() (Trials, error) {
	_, t, err := unsealed(heldOut(f.Env), f.ws().Split())
	return t, err
}

// ErrNoFinal says the workspace has no final split (prepared too small, or before
// there were final splits: `hgate prepare --reset` makes one).
var ErrNoFinal = errors.New("this workspace has no final split (it would hold fewer than 30 tasks, or it was prepared before final splits; `hgate prepare --reset` makes one when the benchmark is large enough)")

// ErrBestIsBaseline says there is nothing to score: no change was kept.
var ErrBestIsBaseline = errors.New("the best is still the baseline (no change was kept): the final split was not scored")

// ScoreFinal scores the best on the final split (see finalScoring.score).
func (e *Env) ScoreFinal(ctx context.Context, by string) (*FinalScore, error) {
	return finalScoring{e}.score(ctx, by)
}

// score scores the best on the final split with trials.max trials in the test lane,
// compares it with the baseline's final trials and the gain seen on the test split, and
// keeps the score in the held-out folder. by says who asked (it is kept with the score).
// The caller holds the repository lock and runs outside any agent's phase.
func (f finalScoring) score(ctx context.Context, by string) (*FinalScore, error) {
	base, err := f.baseline()
	if err != nil || base == nil {
		if err == nil {
			err = ErrNoFinal
		}
		return nil, err
	}
	best, err := store(f).bestRecord()
	if err != nil {
		return nil, err
	}
	if best == nil || best.receipt == nil || best.tree.IsZero() {
		return nil, ErrBestIsBaseline
	}
	ids := slices.Sorted(maps.Keys(base))
	rm, err := carry(f).openVerifiedRoom(best.tree)
	if err != nil {
		return nil, err
	}
	defer rm.Close()
	got := Trials{}
	if err := (trialRunner{f.Env, rm, nil}).run(ctx, ids, 1, f.Config.Gate.TrialsMax, "final split, trial %d", nil, got); err != nil {
		return nil, err
	}
	fs, err := f.compare(base, got, best, ids, by)
	if err != nil {
		return nil, err
	}
	return fs, f.keep(fs)
}

// compare is the comparison: the final gain, the val gain, their gap.
func (f finalScoring) compare(base, got Trials, best *bestRecord, ids []string, by string) (*FinalScore, error) {
	commit, err := f.Repo.Ref(gitguard.BestRef)
	if err != nil {
		return nil, err
	}
	fs := &FinalScore{Time: f.Clock().UTC().Format(time.RFC3339), By: by, Commit: commit.String(), Tree: best.tree.String(),
		Tasks: len(ids), Trials: f.Config.Gate.TrialsMax}
	policy := f.Config.Benchmark.TimeoutPolicy
	fs.BaselineFinal, _ = base.scoreMean(ids, policy)
	fs.BestFinal, _ = got.scoreMean(ids, policy)
	fs.FinalGain = finalscore.Gain(got, base, ids)
	b, err := store(f).baseline()
	if err != nil {
		return nil, err
	}
	sp, err := openSplit(heldOut(f.Env), f.ws().Split())
	if err != nil {
		return nil, err
	}
	test := splitTrials{tasks: sp.Test, best: best.trials}
	if b != nil && b.Test != nil {
		fs.ValGain = finalscore.Gain(best.trials, b.Test, sp.Test)
		test.base = b.Test
	}
	fs.Gap = finalscore.Gap(fs.ValGain, fs.FinalGain)
	labels, err := loadLabels(f.Repo)
	if err != nil || len(labels) == 0 {
		return fs, err
	}
	train, err := suite.LoadTrainResults(f.ws().TrainResults())
	if err != nil {
		return nil, err
	}
	fs.Labels = labelScores(labels, train, test, splitTrials{tasks: ids, best: got, base: base})
	return fs, nil
}

// keep appends fs to final/scores.jsonl (hidden from every sandbox), then counts
// the scoring in the ledger, without its numbers (the ledger's messages are readable).
// A kill between the two leaves the score kept and uncounted: the first thing done here,
// and by every command that records looks, is to count such a score (recordLooks), so a
// look is neither lost nor counted twice.
func (f finalScoring) keep(fs *FinalScore) error {
	l := f.ledger()
	tag, err := finalTag(l)
	if err != nil {
		return err
	}
	if err := recordLooks(l, f.Repo, tag); err != nil {
		return err
	}
	n, err := countLooks(l, f.Repo, tag)
	if err != nil {
		return err
	}
	fs.ID, fs.Scored = lookID(), n.Scored+1
	if err := appendJSONL(filepath.Join(finalDir(f.Repo), "scores.jsonl"), fs); err != nil {
		return err
	}
	fault.Point("final-scored")
	return store(f).commit(ledger.Update{Message: scoredMessage(fs, tag, "")})
}

// FinalScores reads every kept scoring, oldest first; none without a final folder.
func FinalScores(repo *gitguard.Repo) ([]FinalScore, error) {
	var out []FinalScore
	err := readJSONL(filepath.Join(finalDir(repo), "scores.jsonl"), func(line []byte) error {
		var s FinalScore
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		out = append(out, s)
		return nil
	})
	return out, err
}

// readJSONL calls fn on each line of path; none when it does not exist. A last line
// without its newline is an append cut short by a kill: it is no record, and skipped.
func readJSONL(path string, fn func([]byte) error) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data = data[:i+1]
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return sc.Err()
}

// appendJSONL appends v as one line to path (made 0600 in a 0700 folder); one write, so
// that two commands appending at once do not interleave. A last line left without its
// newline by a kill is cut off first, so that it cannot run into this one.
func appendJSONL(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|fsafe.NoFollow, 0o600)
	if err != nil {
		return err
	}
	if err := cutPartial(f); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(append(data, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// cutPartial truncates f after its last newline when its last byte is not one.
func cutPartial(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, st.Size()))
	if err != nil || data[len(data)-1] == '\n' {
		return err
	}
	return f.Truncate(int64(bytes.LastIndexByte(data, '\n') + 1))
}

// Lines is the score as hgate final, hgate status and the loop's end print it.
func (fs *FinalScore) Lines() []string {
	verdict := "the gap's interval holds zero: no sign the best fitted the test split"
	if fs.Gap.Low > 0 {
		verdict = "the gap's interval excludes zero: the val gain overstates what holds on unseen tasks"
	}
	lines := []string{
		fmt.Sprintf("final: best %s on %d sealed tasks × %d trial(s): %.4f (baseline %.4f)", short(fs.Commit), fs.Tasks, fs.Trials, fs.BestFinal, fs.BaselineFinal),
		fmt.Sprintf("final gain %s   val gain %s   val−final gap %s", fs.FinalGain, fs.ValGain, fs.Gap),
		verdict,
		fmt.Sprintf("scored %d time(s), shown %d time(s), as the ledger counts: each look you act on makes it less final", fs.Scored, fs.Shown),
	}
	if fs.Pending > 0 {
		lines = append(lines, fmt.Sprintf("%d showing(s), this one included, wait for the repository lock (a loop holds it) to enter the ledger: the next hgate command that holds it records them", fs.Pending))
	}
	return lines
}

func short(h string) string { return h[:min(len(h), 7)] }

// setAsideFinal renames the final folder of an ended state to final-<entry>, so that the
// new split's scores start at none (a reset makes a new final split, or none).
func setAsideFinal(repo *gitguard.Repo, entry string) error {
	dir := finalDir(repo)
	err := os.Rename(dir, dir+"-"+entry)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
