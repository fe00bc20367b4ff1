package gateway

import (
	"bytes"
	"encoding/json"
	"math"
)

// Tokens are the token counts of one or more model responses, by kind.
type Tokens struct {
	Input      int64 `json:"input"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	Output     int64 `json:"output"`
}

// maxTokens bounds every count the gateway reads from a response: a provider (or a stub
// the agent wrote) cannot make a sum overflow or a budget check lie.
const maxTokens = 1e12

// Total is every token of every kind, saturating.
func (t Tokens) Total() int64 {
	return sat(sat(t.Input, t.CacheRead), sat(t.CacheWrite, t.Output))
}

// Plus is t and u added kind by kind, saturating at maxTokens.
func (t Tokens) Plus(u Tokens) Tokens {
	return Tokens{sat(t.Input, u.Input), sat(t.CacheRead, u.CacheRead), sat(t.CacheWrite, u.CacheWrite), sat(t.Output, u.Output)}
}

// growth is what later holds beyond t, kind by kind (never negative): the usage a
// streamed response reports is cumulative, so each event adds only what it grew by.
func (t Tokens) growth(later Tokens) Tokens {
	d := func(a, b int64) int64 { return max(b-a, 0) }
	return Tokens{d(t.Input, later.Input), d(t.CacheRead, later.CacheRead), d(t.CacheWrite, later.CacheWrite), d(t.Output, later.Output)}
}

// most is the larger of t and u kind by kind.
func (t Tokens) most(u Tokens) Tokens {
	return Tokens{max(t.Input, u.Input), max(t.CacheRead, u.CacheRead), max(t.CacheWrite, u.CacheWrite), max(t.Output, u.Output)}
}

func sat(a, b int64) int64 {
	if s := a + b; s >= 0 && s <= maxTokens {
		return s
	}
	return maxTokens
}

// count is a token count as a response states it, bounded: not a finite whole number in
// [0, maxTokens] reads as 0 below and maxTokens above.
func count(v *float64) int64 {
	if v == nil || math.IsNaN(*v) || *v <= 0 {
		return 0
	}
	if *v >= maxTokens {
		return maxTokens
	}
	return int64(*v)
}

// wireUsage is every usage object the two APIs send, as one shape: Anthropic's
// (input_tokens, cache_*_input_tokens, output_tokens) and OpenAI's Responses
// (input_tokens, input_tokens_details.cached_tokens, output_tokens) and Chat Completions
// (prompt_tokens, completion_tokens, prompt_tokens_details.cached_tokens).
type wireUsage struct {
	InputTokens         *float64 `json:"input_tokens"`
	OutputTokens        *float64 `json:"output_tokens"`
	CacheCreationTokens *float64 `json:"cache_creation_input_tokens"`
	CacheReadTokens     *float64 `json:"cache_read_input_tokens"`
	PromptTokens        *float64 `json:"prompt_tokens"`
	CompletionTokens    *float64 `json:"completion_tokens"`
	InputDetails        *struct {
		Cached *float64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptDetails *struct {
		Cached *float64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// tokens are the usage's counts. OpenAI counts cached tokens inside the input tokens;
// hgate counts them apart, as Anthropic does, so that each is priced once.
func (w *wireUsage) tokens() Tokens {
	if w == nil {
		return Tokens{}
	}
	t := Tokens{Input: count(w.InputTokens), Output: count(w.OutputTokens),
		CacheWrite: count(w.CacheCreationTokens), CacheRead: count(w.CacheReadTokens)}
	if w.PromptTokens != nil {
		t.Input = count(w.PromptTokens)
	}
	if w.CompletionTokens != nil {
		t.Output = count(w.CompletionTokens)
	}
	cached := Tokens{}
	if w.InputDetails != nil {
		cached.CacheRead = count(w.InputDetails.Cached)
	}
	if w.PromptDetails != nil {
		cached.CacheRead = count(w.PromptDetails.Cached)
	}
	if cached.CacheRead > 0 {
		t.CacheRead = cached.CacheRead
		t.Input = max(t.Input-cached.CacheRead, 0)
	}
	return t
}

// event is the part of a response body (whole, or one server-sent event's data) that
// carries a model and a usage, wherever the API puts them.
type event struct {
	Type    string     `json:"type"`
	Model   string     `json:"model"`
	Usage   *wireUsage `json:"usage"`
	Message *struct {
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	} `json:"message"` // Anthropic's message_start
	Response *struct {
		Model string     `json:"model"`
		Usage *wireUsage `json:"usage"`
	} `json:"response"` // OpenAI Responses' response.completed and friends
}

// usageOf reads a JSON object's model and cumulative usage; ok is false when it holds
// no usage.
func usageOf(data []byte) (model string, t Tokens, ok bool) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return "", Tokens{}, false
	}
	var e event
	if json.Unmarshal(data, &e) != nil {
		return "", Tokens{}, false
	}
	switch {
	case e.Message != nil && e.Message.Usage != nil:
		return e.Message.Model, e.Message.Usage.tokens(), true
	case e.Response != nil && e.Response.Usage != nil:
		return e.Response.Model, e.Response.Usage.tokens(), true
	case e.Usage != nil:
		return e.Model, e.Usage.tokens(), true
	}
	return e.Model, Tokens{}, false
}
