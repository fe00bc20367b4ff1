package gatewayapi

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/hgate/hgate/spend"
)

// Price is what a model costs, in US dollars per million tokens of each kind.
type Price struct {
	Input      float64 `yaml:"input" json:"input"`
	CacheRead  float64 `yaml:"cache_read" json:"cache_read"`
	CacheWrite float64 `yaml:"cache_write" json:"cache_write"`
	Output     float64 `yaml:"output" json:"output"`
}

// Prices maps a model name, or the start of one ("claude-sonnet-4-5" prices
// "claude-sonnet-4-5-20250929"), to its price.
type Prices map[string]Price

// DefaultPrices are the list prices of the presets' current models, as their providers
// publish them; loop.prices overrides or adds entries. Anthropic bills a cache write
// at 1.25× input (one kept an hour at 2×, which the gateway adds) and a cache read at
// 0.1×; OpenAI a cached input token at 0.1×.
var DefaultPrices = Prices{
	"claude-opus-4-5": {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	// The later Opus 4 models, at Opus 4.5's price as claude 2.1.197 prices them (its
	// total_cost_usd for claude-opus-4-8, its default model): without these entries they
	// would take claude-opus-4's, three times as dear.
	"claude-opus-4-6":   {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	"claude-opus-4-7":   {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	"claude-opus-4-8":   {Input: 5, CacheRead: 0.5, CacheWrite: 6.25, Output: 25},
	"claude-opus-4-1":   {Input: 15, CacheRead: 1.5, CacheWrite: 18.75, Output: 75},
	"claude-opus-4":     {Input: 15, CacheRead: 1.5, CacheWrite: 18.75, Output: 75},
	"claude-sonnet-4":   {Input: 3, CacheRead: 0.3, CacheWrite: 3.75, Output: 15},
	"claude-sonnet-4-5": {Input: 3, CacheRead: 0.3, CacheWrite: 3.75, Output: 15},
	"claude-haiku-4-5":  {Input: 1, CacheRead: 0.1, CacheWrite: 1.25, Output: 5},
	"claude-3-5-haiku":  {Input: 0.8, CacheRead: 0.08, CacheWrite: 1, Output: 4},
	"gpt-5":             {Input: 1.25, CacheRead: 0.125, Output: 10},
	"gpt-5-mini":        {Input: 0.25, CacheRead: 0.025, Output: 2},
	"gpt-5-nano":        {Input: 0.05, CacheRead: 0.005, Output: 0.4},
	"gpt-5.1":           {Input: 1.25, CacheRead: 0.125, Output: 10},
	"gpt-5.1-codex":     {Input: 1.25, CacheRead: 0.125, Output: 10},
	"gpt-5.1-codex-max": {Input: 1.25, CacheRead: 0.125, Output: 10},
	"gpt-5-codex":       {Input: 1.25, CacheRead: 0.125, Output: 10},
}

// Merge is p with over's entries added or replacing p's.
func (p Prices) Merge(over Prices) Prices {
	m := Prices{}
	for k, v := range p {
		m[k] = v
	}
	for k, v := range over {
		m[k] = v
	}
	return m
}

// Validate refuses a price that is not a finite number in [0, 10000] dollars per million.
func (p Prices) Validate() error {
	for _, name := range p.names() {
		v := p[name]
		for _, f := range []float64{v.Input, v.CacheRead, v.CacheWrite, v.Output} {
			if math.IsNaN(f) || f < 0 || f > 10000 {
				return fmt.Errorf("loop.prices.%s: %v is not a price in dollars per million tokens (0 to 10000)", name, f)
			}
		}
	}
	return nil
}

// Lookup is the price of model: its own entry, else the entry it is a dated snapshot of
// ("claude-sonnet-4-5-20250929", "gpt-5-2025-08-07"). ok is false for a model the table
// does not know. A model whose name only starts with an entry's is another model, which
// may cost more (gpt-5-pro, gpt-5.5 and gpt-5), so it is not priced as that entry.
func (p Prices) Lookup(model string) (Price, bool) {
	if v, ok := p[model]; ok {
		return v, true
	}
	for _, n := range []int{len("20250929"), len("2025-08-07")} { // Anthropic's and OpenAI's dates
		if i := len(model) - n - 1; i > 0 && model[i] == '-' && dated(model[i+1:]) {
			v, ok := p[model[:i]]
			return v, ok
		}
	}
	return Price{}, false
}

// dated reports whether s is a snapshot's date: YYYYMMDD or YYYY-MM-DD.
func dated(s string) bool {
	if len(s) == 10 && s[4] == '-' && s[7] == '-' {
		s = s[:4] + s[5:7] + s[8:]
	}
	return len(s) == 8 && strings.Trim(s, "0123456789") == ""
}

// Dearest is the highest price of each kind in the table: what a model the table does
// not know is charged, so that a budget is not passed by an unpriced model dearer than
// the one it names (one dearer than every entry still is: give it an entry).
func (p Prices) Dearest() Price {
	var d Price
	for _, v := range p {
		d = Price{max(d.Input, v.Input), max(d.CacheRead, v.CacheRead), max(d.CacheWrite, v.CacheWrite), max(d.Output, v.Output)}
	}
	return d
}

// Cost is what t tokens cost at price v, in dollars.
func (v Price) Cost(t spend.Tokens) float64 {
	return (float64(t.Input)*v.Input + float64(t.CacheRead)*v.CacheRead +
		float64(t.CacheWrite)*v.CacheWrite + float64(t.Output)*v.Output) / 1e6
}

func (p Prices) names() []string {
	var n []string
	for k := range p {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}
