package gateway

import (
	"fmt"
	"sort"
	"sync"

	"github.com/hgate/hgate/gatewayapi"
	"github.com/hgate/hgate/spend"
)

// The count's types are gatewayapi's, which hgate reads without linking this package's
// HTTP server; the names here keep the gateway's own code and tests as they were.
type (
	Limits = gatewayapi.Limits
	Usage  = gatewayapi.Usage
	Scope  = gatewayapi.Scope
	Price  = gatewayapi.Price
	Prices = gatewayapi.Prices
)

// DefaultPrices are gatewayapi's list prices.
var DefaultPrices = gatewayapi.DefaultPrices

// Book counts what every scope spent and answers the budget before each request. The
// spend it starts from (a resumed run's) is given to New as Spent.
type Book struct {
	mu      sync.Mutex
	limits  Limits
	base    Scope // spent before this gateway started
	scopes  map[string]*Scope
	onUsage func(Usage)
}

func newBook(limits Limits, spent Scope, onUsage func(Usage)) *Book {
	return &Book{limits: limits, base: spent, scopes: map[string]*Scope{}, onUsage: onUsage}
}

// ErrBudget is the refusal of a request that would start past the budget.
type ErrBudget struct {
	Limits Limits
	Spent  Scope
}

func (e *ErrBudget) Error() string {
	if e.Limits.USD > 0 && e.Spent.USD >= e.Limits.USD {
		return fmt.Sprintf("budget reached: $%.2f spent of --budget-usd %.2f", e.Spent.USD, e.Limits.USD)
	}
	return fmt.Sprintf("budget reached: %d tokens spent of --budget-tokens %d", e.Spent.Tokens.Total(), e.Limits.Tokens)
}

// admit counts a request of scope and refuses it when the spend already reached a limit:
// a request never starts past the budget (one in flight when it is crossed finishes).
func (b *Book) admit(scope string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.scope(scope)
	total := b.totalLocked()
	if (b.limits.USD > 0 && total.USD >= b.limits.USD) || (b.limits.Tokens > 0 && total.Tokens.Total() >= b.limits.Tokens) {
		s.Refused++
		s.Budget++
		return &ErrBudget{Limits: b.limits, Spent: total}
	}
	s.Requests++
	return nil
}

func (b *Book) refused(scope string) {
	b.mu.Lock()
	b.scope(scope).Refused++
	b.mu.Unlock()
}

// answered counts a provider's answer: an error status, and whether a CLI retries it.
func (b *Book) answered(scope string, status int) {
	if status < 400 {
		return
	}
	b.mu.Lock()
	s := b.scope(scope)
	s.Errors++
	if status == 429 || status >= 500 {
		s.Retried++
	}
	b.mu.Unlock()
}

// opened and closed count the responses in flight.
func (b *Book) opened(scope string, delta int) {
	b.mu.Lock()
	b.scope(scope).Open += delta
	b.mu.Unlock()
}

func (b *Book) add(u Usage) {
	b.mu.Lock()
	s := b.scope(u.Scope)
	s.Tokens = s.Tokens.Add(u.Tokens)
	s.USD = spend.AddUSD(s.USD, u.USD)
	s.Unpriced = s.Unpriced || u.Unpriced
	on := b.onUsage
	b.mu.Unlock()
	if on != nil {
		on(u)
	}
}

// Charge adds spend the gateway did not see (the benchmark's runs, an agent it does not
// route) to what its budget check counts, so that a request never starts past the run's
// whole budget.
func (b *Book) Charge(s spend.Spend) {
	b.mu.Lock()
	b.base.Tokens = b.base.Tokens.Add(s.Tokens)
	b.base.USD = spend.AddUSD(b.base.USD, s.USD)
	b.mu.Unlock()
}

// Spent implements spend.Meter: everything the gateway counted, the spend it started
// from and what was charged to it included.
func (b *Book) Spent() spend.Spend { return b.Total().Spend() }

// Total is everything spent: before this gateway and in every scope since.
func (b *Book) Total() Scope {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.totalLocked()
}

// Scopes is a copy of what each scope spent, by name.
func (b *Book) Scopes() map[string]Scope {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := map[string]Scope{}
	for k, v := range b.scopes {
		m[k] = *v
	}
	return m
}

func (b *Book) totalLocked() Scope {
	t := b.base
	names := make([]string, 0, len(b.scopes))
	for k := range b.scopes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s := b.scopes[k]
		t.Tokens = t.Tokens.Add(s.Tokens)
		t.USD = spend.AddUSD(t.USD, s.USD)
		t.Requests += s.Requests
		t.Refused += s.Refused
		t.Budget += s.Budget
		t.Errors += s.Errors
		t.Retried += s.Retried
		t.Open += s.Open
		t.Unpriced = t.Unpriced || s.Unpriced
	}
	return t
}

func (b *Book) scope(name string) *Scope {
	s := b.scopes[name]
	if s == nil {
		s = &Scope{}
		b.scopes[name] = s
	}
	return s
}

var _ spend.Meter = (*Book)(nil)
