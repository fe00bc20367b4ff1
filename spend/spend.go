// Package spend is what a run costs, in one type: dollars and tokens by kind, the meters
// they are read from, and the budget they are checked against.
//
// Every figure comes from something hgate does not control: an agent CLI's own report
// (claude's total_cost_usd, codex's usage, a custom agent's HGATE_COST_USD lines), the
// benchmark's (Harbor's trial results), and the model gateway's count at the wire (the
// gateway package: its Book is a Meter, and where it metered a call its figure is the spend).
// So every figure is checked before it is used (finite, within MaxUSD and MaxTokens per
// report: Check), and every sum saturates (Add) — a figure can make a run stop on its
// budget, never make a total +Inf or wrap, which no JSON file can hold.
package spend

import (
	"fmt"
	"math"
	"strconv"

	"github.com/hgate/hgate/internal/human"
	"strings"
)

// The bounds of one report (an agent run's, a benchmark request's): above them a figure
// is refused, not counted.
const (
	MaxUSD    = 1e6  // dollars in one report
	MaxTokens = 1e12 // tokens of one kind in one report
)

// The bounds of a sum: totals stop here rather than grow past what a journal can hold.
const (
	maxTotalUSD    = 1e15
	maxTotalTokens = math.MaxInt64
)

// Tokens are tokens by kind, as the CLIs count them.
type Tokens struct {
	Input      int64 `json:"input"`       // input not read from or written to the cache
	Output     int64 `json:"output"`      // output, reasoning included
	CacheRead  int64 `json:"cache_read"`  // input read from the prompt cache
	CacheWrite int64 `json:"cache_write"` // input written to the prompt cache (claude)
}

// Total is every token counted, saturating.
func (t Tokens) Total() int64 {
	return AddTokens(AddTokens(t.Input, t.Output), AddTokens(t.CacheWrite, t.CacheRead))
}

// Add is t and o, each kind saturating.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{AddTokens(t.Input, o.Input), AddTokens(t.Output, o.Output),
		AddTokens(t.CacheRead, o.CacheRead), AddTokens(t.CacheWrite, o.CacheWrite)}
}

// Sub is what t counted beyond before, never below zero: a cumulative count's share.
func (t Tokens) Sub(before Tokens) Tokens {
	return Tokens{Input: max(t.Input-before.Input, 0), Output: max(t.Output-before.Output, 0),
		CacheRead: max(t.CacheRead-before.CacheRead, 0), CacheWrite: max(t.CacheWrite-before.CacheWrite, 0)}
}

// Check names the first kind outside 0..MaxTokens; nil when every kind is within.
func (t Tokens) Check() error {
	for _, k := range []struct {
		name string
		n    int64
	}{{"input", t.Input}, {"output", t.Output}, {"cache read", t.CacheRead}, {"cache write", t.CacheWrite}} {
		if err := CheckTokens(k.name+" tokens", k.n); err != nil {
			return err
		}
	}
	return nil
}

// Spend is dollars and tokens spent.
type Spend struct {
	USD    float64
	Tokens Tokens
}

// Add is s and o, saturating.
func (s Spend) Add(o Spend) Spend { return Spend{AddUSD(s.USD, o.USD), s.Tokens.Add(o.Tokens)} }

// Zero reports whether nothing was spent.
func (s Spend) Zero() bool { return s == Spend{} }

// Meter is a source of spend: an agent CLI's report of one run, the benchmark's count of
// its own agents' trials, a gateway's count at the wire.
type Meter interface {
	Spent() Spend
}

// AddUSD is a+b in millionths of a dollar (0.01 + 0.02 reads 0.03, not
// 0.030000000000000002), saturating; a b that is not a finite non-negative figure adds
// nothing (Check refuses it first).
func AddUSD(a, b float64) float64 {
	if !(b >= 0) || math.IsInf(b, 0) {
		return a
	}
	return math.Min(math.Round((a+b)*1e6)/1e6, maxTotalUSD)
}

// AddTokens is a+b, saturating; a negative b adds nothing.
func AddTokens(a, b int64) int64 {
	if b <= 0 {
		return a
	}
	if a > maxTotalTokens-b {
		return maxTotalTokens
	}
	return a + b
}

// CheckUSD refuses a dollar figure that is not finite or outside 0..MaxUSD.
func CheckUSD(what string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > MaxUSD {
		return fmt.Errorf("%s %s is outside 0 ≤ usd ≤ %g", what, strconv.FormatFloat(x, 'g', 6, 64), float64(MaxUSD))
	}
	return nil
}

// CheckTokens refuses a token count outside 0..MaxTokens.
func CheckTokens(what string, n int64) error {
	if n < 0 || n > MaxTokens {
		return fmt.Errorf("%s %d is outside 0 ≤ tokens ≤ %g", what, n, float64(MaxTokens))
	}
	return nil
}

// ParseUSD reads a dollar figure as an agent prints it, refusing what CheckUSD refuses
// and what is not a number (1e400 is refused: out of range, not +Inf).
func ParseUSD(what, s string) (float64, error) {
	s = strings.TrimSpace(s)
	x, err := strconv.ParseFloat(s, 64)
	if err != nil && !strings.Contains(err.Error(), "out of range") {
		return 0, fmt.Errorf("%s %q is not a number", what, s)
	}
	if err != nil {
		return 0, fmt.Errorf("%s %s is outside 0 ≤ usd ≤ %g", what, s, float64(MaxUSD))
	}
	return x, CheckUSD(what, x)
}

// Budget is what a run may spend; a zero field sets no limit.
type Budget struct {
	USD    float64
	Tokens int64
}

// Reached says how s reaches b, or "" while some of it is left: spent reaching the
// budget, so nothing starts with nothing left.
func (b Budget) Reached(s Spend) string {
	switch tokens := s.Tokens.Total(); {
	case b.USD > 0 && s.USD >= b.USD:
		return fmt.Sprintf("%s spent of the %s budget", human.USD(s.USD), human.USD(b.USD))
	case b.Tokens > 0 && tokens >= b.Tokens:
		return fmt.Sprintf("%s spent of the %s-token budget", human.Tokens(tokens), human.Count(b.Tokens))
	}
	return ""
}

// Rest is what is left of b after s, in each limit b sets (zero where it sets none or
// nothing is left): what a figure hgate refused counts as, so that it reaches the budget.
func (b Budget) Rest(s Spend) (usd float64, tokens int64) {
	if b.USD > 0 {
		usd = math.Max(b.USD-s.USD, 0)
	}
	if b.Tokens > 0 {
		tokens = max(b.Tokens-s.Tokens.Total(), 0)
	}
	return usd, tokens
}
