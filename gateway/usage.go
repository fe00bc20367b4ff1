package gateway

import (
	"bytes"
	"encoding/json"
	"math"

	"github.com/hgate/hgate/spend"
)

// maxTokens bounds every count the gateway reads from a response (spend.MaxTokens, the
// bound of one report): a provider (or a stub the agent wrote) cannot make a sum
// overflow or a budget check lie; sums saturate as spend's do.
const maxTokens = spend.MaxTokens

// most is the larger of t and u kind by kind.
func most(t, u spend.Tokens) spend.Tokens {
	return spend.Tokens{Input: max(t.Input, u.Input), CacheRead: max(t.CacheRead, u.CacheRead),
		CacheWrite: max(t.CacheWrite, u.CacheWrite), Output: max(t.Output, u.Output)}
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
	// CacheCreation splits Anthropic's cache writes by how long they are kept.
	CacheCreation *struct {
		Hour *float64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	PromptDetails *struct {
		Cached *float64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// tokens are the usage's counts. OpenAI counts cached tokens inside the input tokens;
// hgate counts them apart, as Anthropic does, so that each is priced once.
func (w *wireUsage) tokens() spend.Tokens {
	if w == nil {
		return spend.Tokens{}
	}
	t := spend.Tokens{Input: count(w.InputTokens), Output: count(w.OutputTokens),
		CacheWrite: count(w.CacheCreationTokens), CacheRead: count(w.CacheReadTokens)}
	if w.PromptTokens != nil {
		t.Input = count(w.PromptTokens)
	}
	if w.CompletionTokens != nil {
		t.Output = count(w.CompletionTokens)
	}
	cached := spend.Tokens{}
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

// usage is a response's cumulative usage as the gateway prices it: its tokens and, of its
// cache writes, those kept an hour (Anthropic's ttl "1h"), which cost more than the rest.
type usage struct {
	spend.Tokens
	hour int64
}

// hour is how many of the usage's cache writes are kept an hour, at most all of them.
func (w *wireUsage) hour(writes int64) int64 {
	if w == nil || w.CacheCreation == nil {
		return 0
	}
	return min(count(w.CacheCreation.Hour), writes)
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
func usageOf(data []byte) (model string, u usage, ok bool) {
	model, u, ok, _ = readEvent(data)
	return model, u, ok
}

// lastEvents are the stream events after which a provider sends nothing it bills: the
// answer is whole, its usage stated (Anthropic's message_stop, the Responses API's end
// states). Chat Completions ends with the line "[DONE]".
var lastEvents = map[string]bool{"message_stop": true, "response.completed": true, "response.incomplete": true, "response.failed": true}

// readEvent is usageOf, and whether data is its stream's last event.
func readEvent(data []byte) (model string, u usage, ok, last bool) {
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		return "", usage{}, false, true
	}
	if len(data) == 0 || data[0] != '{' {
		return "", usage{}, false, false
	}
	var e event
	if json.Unmarshal(data, &e) != nil {
		return "", usage{}, false, false
	}
	model, u, ok = e.usage()
	return model, u, ok, lastEvents[e.Type]
}

// usage is the event's model and cumulative usage, where its API puts them.
func (e *event) usage() (model string, u usage, ok bool) {
	var w *wireUsage
	switch {
	case e.Message != nil && e.Message.Usage != nil:
		model, w = e.Message.Model, e.Message.Usage
	case e.Response != nil && e.Response.Usage != nil:
		model, w = e.Response.Model, e.Response.Usage
	case e.Usage != nil:
		model, w = e.Model, e.Usage
	default:
		return e.Model, usage{}, false
	}
	t := w.tokens()
	return model, usage{Tokens: t, hour: w.hour(t.CacheWrite)}, true
}
