package gate

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hgate/hgate/config"
	"github.com/hgate/hgate/gitguard"
	"github.com/hgate/hgate/internal/lazyre"
	"github.com/hgate/hgate/ledger"
	"github.com/hgate/hgate/split"
	"github.com/hgate/hgate/workspace"
)

// Every look at the sealed final split is one ledger commit (refs/hgate/ledger) that
// changes no file: a scoring ("final: scored …") or a command that showed a score
// ("final: shown by hgate status"). Each message ends with a tag naming the split and the
// look, "[final <split> scored|shown <id>]", so the ledger's count is of this split's
// looks only (a reset makes a new split) and a look is counted once however often it is
// recorded. The held-out folder keeps each look first (scores.jsonl, shown.jsonl, with
// the same id): a command killed before its ledger commit, or one that could not take the
// repository lock because a loop holds it, leaves a look the ledger lacks, and the next
// command holding the lock records it (recordLooks). The count hgate shows is the
// ledger's; Pending says how many showings wait for the lock.

// Looks is how often the final split was looked at, as the ledger counts.
type Looks struct {
	Scored int `json:"scored"`
	Shown  int `json:"shown"`
	// Pending is how many showings are kept in the held-out folder but not yet in the
	// ledger: their command found the repository lock held (by a loop); the next hgate
	// command that holds the lock records them.
	Pending int `json:"shown_pending,omitempty"`
}

// showing is one line of final/shown.jsonl.
type showing struct {
	ID   string `json:"id"`
	Time string `json:"time"`
	By   string `json:"by"`
}

var lookTag = lazyre.New(`\[final ([0-9a-f]{12}) (scored|shown) ([0-9a-f]{16})\]$`)

// lookID is a new look's id: random, so two commands showing at once never share one.
func lookID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// finalTag names the workspace's final split in the ledger: the start of the keyed
// digest split.json (as the ledger holds it) names the sealed record by. "" without one.
func finalTag(l *ledger.Ledger) (string, error) {
	data, err := l.File(workspace.Split)
	if err != nil || data == nil {
		return "", err
	}
	sp, err := split.Parse(workspace.Split, data)
	if err != nil {
		return "", err
	}
	_, sum, _ := strings.Cut(sp.FinalSHA, ":")
	if len(sum) < 12 {
		return "", nil
	}
	return sum[:12], nil
}

// ledgerLooks reads the looks at the split tag from the ledger: id → "scored" or "shown".
func ledgerLooks(l *ledger.Ledger, tag string) (map[string]string, error) {
	entries, err := l.Log(0)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range entries {
		if m := lookTag.Get().FindStringSubmatch(e.Message); m != nil && m[1] == tag {
			out[m[3]] = m[2]
		}
	}
	return out, nil
}

// recordLooks commits to the ledger every look the held-out folder keeps and the ledger
// lacks, oldest first: a scoring cut short by a kill, showings made while the lock was
// held elsewhere. The caller holds the repository lock.
func recordLooks(l *ledger.Ledger, repo *gitguard.Repo, tag string) error {
	have, err := ledgerLooks(l, tag)
	if err != nil {
		return err
	}
	scores, err := FinalScores(repo)
	if err != nil {
		return err
	}
	for _, s := range scores {
		if s.ID != "" && have[s.ID] == "" {
			if err := l.Commit(ledger.Update{Message: scoredMessage(&s, tag, " (recorded after an interruption)")}); err != nil {
				return err
			}
		}
	}
	shows, err := readShowings(repo)
	if err != nil {
		return err
	}
	for _, s := range shows {
		if have[s.ID] == "" {
			if err := l.Commit(ledger.Update{Message: shownMessage(s, tag)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// scoredMessage is a scoring's ledger message; note goes before the tag, which ends it.
func scoredMessage(fs *FinalScore, tag, note string) string {
	return fmt.Sprintf("final: scored the best (tree %s) on the sealed final split, look %d%s [final %s scored %s]", short(fs.Tree), fs.Scored, note, tag, fs.ID)
}

func shownMessage(s showing, tag string) string {
	return fmt.Sprintf("final: shown by %s [final %s shown %s]", s.By, tag, s.ID)
}

// countLooks is the ledger's count of the split's looks, and the showings still pending.
func countLooks(l *ledger.Ledger, repo *gitguard.Repo, tag string) (Looks, error) {
	have, err := ledgerLooks(l, tag)
	if err != nil {
		return Looks{}, err
	}
	var n Looks
	for _, kind := range have {
		if kind == "scored" {
			n.Scored++
		} else {
			n.Shown++
		}
	}
	shows, err := readShowings(repo)
	for _, s := range shows {
		if have[s.ID] == "" {
			n.Pending++
		}
	}
	return n, err
}

// readShowings reads final/shown.jsonl; lines from before showings had ids are skipped.
func readShowings(repo *gitguard.Repo) ([]showing, error) {
	var out []showing
	err := readJSONL(filepath.Join(finalDir(repo), "shown.jsonl"), func(line []byte) error {
		var s showing
		if err := json.Unmarshal(line, &s); err != nil {
			return err
		}
		if s.ID != "" {
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// ShowFinal is the last final score for a command that shows it to the user (status,
// report, hgate final, a loop's end), with the ledger's count of looks. The showing is
// kept in the held-out folder first; locked says the caller holds the repository lock,
// and then it is recorded in the ledger at once (with any look left pending). Without
// the lock it stays pending (the score's Pending says so) until a command holding the
// lock records it. nil when the final split was never scored.
func ShowFinal(repo *gitguard.Repo, wsDir, by string, locked bool) (*FinalScore, error) {
	all, err := FinalScores(repo)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	l := ledger.Open(repo, wsDir)
	tag, err := finalTag(l)
	if err != nil {
		return nil, err
	}
	s := showing{ID: lookID(), Time: time.Now().UTC().Format(time.RFC3339), By: by}
	if err := appendJSONL(filepath.Join(finalDir(repo), "shown.jsonl"), s); err != nil {
		return nil, err
	}
	if locked {
		if err := recordLooks(l, repo, tag); err != nil {
			return nil, err
		}
	}
	last := all[len(all)-1]
	n, err := countLooks(l, repo, tag)
	last.Scored, last.Shown, last.Pending = n.Scored, n.Shown, n.Pending
	return &last, err
}

// NoFinalReason says why the workspace has no sealed final split, for hgate status and
// hgate final: too few tasks for split.final (as prepare said), split.final 0, or a
// split made before final splits. "" when it has one, or is not prepared. Read from the
// ledger's split.json, not the workspace's.
func NoFinalReason(cfg *config.Config, repo *gitguard.Repo) (string, error) {
	data, err := ledger.Open(repo, cfg.WorkspaceDir()).File(workspace.Split)
	if err != nil || data == nil {
		return "", err
	}
	sp, err := split.Parse(workspace.Split, data)
	if err != nil || sp.FinalSHA != "" {
		return "", err
	}
	if !(cfg.Split.Final > 0) {
		return "split.final is 0 in hgate.yaml, so no final split is made", nil
	}
	total := len(sp.Train) + sp.TestCount()
	if why := split.TooFewForFinal(total, cfg.Split.Final, MinFinal); why != "" {
		return fmt.Sprintf("%s (split.final: %g of the tasks)", why, cfg.Split.Final), nil
	}
	return "the workspace was prepared before final splits (or with a smaller split.final): `hgate prepare --reset` makes one", nil
}
