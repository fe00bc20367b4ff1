package spend

import (
	"math"
	"strings"
	"testing"
)

func TestAddSaturates(t *testing.T) {
	if got := AddUSD(0.01, 0.02); got != 0.03 {
		t.Errorf("0.01+0.02 = %v", got)
	}
	for _, b := range []float64{math.Inf(1), math.NaN(), -1} {
		if got := AddUSD(1, b); got != 1 {
			t.Errorf("1+%v = %v, want 1 (not counted)", b, got)
		}
	}
	if got := AddUSD(MaxUSD, math.MaxFloat64); got != maxTotalUSD {
		t.Errorf("a huge sum = %v, want %v", got, float64(maxTotalUSD))
	}
	if got := AddTokens(math.MaxInt64-1, 5); got != math.MaxInt64 {
		t.Errorf("tokens wrapped: %d", got)
	}
	big := Tokens{Input: math.MaxInt64, Output: math.MaxInt64}
	if big.Total() != math.MaxInt64 || big.Add(big).Input != math.MaxInt64 {
		t.Errorf("tokens wrapped: %d", big.Total())
	}
}

func TestParseUSD(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string // "" = accepted
	}{
		{"0.25", ""}, {" 1e6 ", ""}, {"0", ""},
		{"1.7e308", "outside"}, {"1e400", "outside"}, {"NaN", "outside"}, {"-1", "outside"},
		{"+Inf", "outside"}, {"1000000.5", "outside"}, {"abc", "not a number"},
	} {
		_, err := ParseUSD("HGATE_COST_USD", c.in)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("ParseUSD(%q) = %v, want %q", c.in, err, c.want)
		}
	}
	if err := (Tokens{CacheRead: MaxTokens + 1}).Check(); err == nil || !strings.Contains(err.Error(), "cache read tokens") {
		t.Errorf("Check: %v", err)
	}
}

func TestBudget(t *testing.T) {
	b := Budget{USD: 5, Tokens: 100}
	if got := b.Reached(Spend{USD: 4.99, Tokens: Tokens{Input: 99}}); got != "" {
		t.Errorf("reached early: %s", got)
	}
	if got := b.Reached(Spend{USD: 5}); got != "$5.00 spent of the $5.00 budget" {
		t.Errorf("usd: %q", got)
	}
	if got := b.Reached(Spend{Tokens: Tokens{Output: 100}}); got != "100 tokens spent of the 100-token budget" {
		t.Errorf("tokens: %q", got)
	}
	usd, tokens := b.Rest(Spend{USD: 1.5, Tokens: Tokens{Input: 30}})
	if usd != 3.5 || tokens != 70 {
		t.Errorf("rest %v %d", usd, tokens)
	}
	if usd, tokens := (Budget{}).Rest(Spend{USD: 1}); usd != 0 || tokens != 0 {
		t.Errorf("no budget: rest %v %d", usd, tokens)
	}
}
