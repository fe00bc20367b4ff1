package gatewayapi

import "github.com/hgate/hgate/spend"

// Limits is a budget: a spend in dollars and a count of tokens (0 = none of that kind).
type Limits struct {
	USD    float64
	Tokens int64
}

// Usage is one usage event the gateway saw: the growth of one response's usage, its
// model, its scope, what it cost, and whether the response's end was seen (an event of a
// stream still in flight is final=false: the count up to it is exact, the response may
// have gone on).
type Usage struct {
	Scope    string       `json:"scope"`
	Model    string       `json:"model"`
	Tokens   spend.Tokens `json:"tokens"`
	USD      float64      `json:"usd"`
	Unpriced bool         `json:"unpriced,omitempty"`
	Final    bool         `json:"final"`
}

// Scope is what the gateway counted for one scope (a phase of an agent: attempt,
// repair, reflect, build, qualification).
type Scope struct {
	Tokens   spend.Tokens `json:"tokens"`
	USD      float64      `json:"usd"`
	Requests int          `json:"requests"`
	Refused  int          `json:"refused"`          // requests the gateway did not forward (endpoint, tool, budget)
	Budget   int          `json:"budget,omitempty"` // of those, the ones refused on the budget
	Errors   int          `json:"errors"`           // responses of the provider with status 400 and above
	Retried  int          `json:"retried"`          // of those, the ones a CLI retries (429, 5xx)
	Unpriced bool         `json:"unpriced,omitempty"`
	Open     int          `json:"open,omitempty"` // responses whose end has not been seen
}

// Spend is the scope's spend as the one spend type.
func (s Scope) Spend() spend.Spend { return spend.Spend{USD: s.USD, Tokens: s.Tokens} }
