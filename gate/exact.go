package gate

import "github.com/hgate/hgate/record"

// ExactScore returns a results.tsv row's val_score before it was rounded to 4 decimals:
// val_mean from the receipt of the row's commit's tree, or from baseline.json for row 0,
// as the ledger holds them. A difference of two scores is taken from these and rounded
// once (0.6666… − 0.3333… is 0.3333, where the rows give 0.3334). ok is false when hgate
// kept none that rounds to the row's value (files from an older hgate, a row added by
// hand, a commit that is gone): callers use the row's value.
func (e *Env) ExactScore(row record.Row) (mean float64, ok bool, err error) {
	return store{e}.exactScore(row)
}

// exactScore is ExactScore.
func (s store) exactScore(row record.Row) (mean float64, ok bool, err error) {
	var exact *float64
	if row.Iteration == 0 && row.Commit == "baseline" {
		base, err := s.baseline()
		if err != nil || base == nil {
			return 0, false, err
		}
		exact = base.ValMean
	} else {
		h, err := s.Repo.CommitByPrefix(row.Commit)
		if err != nil {
			return 0, false, nil
		}
		tree, err := s.Repo.TreeOf(h)
		if err != nil {
			return 0, false, nil
		}
		rc, err := s.receipt(tree.String())
		if err != nil || rc == nil {
			return 0, false, err
		}
		exact = rc.ValMean
	}
	if exact == nil || round4(*exact) != round4(row.ValScore) {
		return 0, false, nil
	}
	return *exact, true, nil
}
