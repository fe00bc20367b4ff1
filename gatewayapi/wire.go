// Package gatewayapi is what hgate knows of its model gateway without linking it: the
// count's types (a scope's spend, a usage event, the prices) and the client of the
// gateway's process, hgate-gateway. The gateway is a binary of its own so that net/http
// and crypto/tls are not paid for at the start of every hgate command; the loop starts
// it as a child it owns and speaks to it over two socket pairs it opened: one of JSON
// lines (the configuration, requests and their answers, usage events and their acks) and
// one that hands it, one byte each, the connections the loop accepted on its listeners.
package gatewayapi

import "github.com/hgate/hgate/spend"

// Binary is the gateway's executable, looked for next to hgate's own (symlinks
// resolved) and nowhere else: it holds the provider's API key, so one planted in a PATH
// folder must never be started.
const Binary = "hgate-gateway"

// Protocol is this build's version of the wire below: the gateway answers the
// configuration with it, and hgate refuses a gateway from another build.
const Protocol = 2

// Config is what the gateway forwards to and counts against: the loop's settings, sent
// as the first line (the keys never on a command line or in an environment).
type Config struct {
	AnthropicURL string `json:"anthropic_url,omitempty"`
	OpenAIURL    string `json:"openai_url,omitempty"`
	AnthropicKey string `json:"anthropic_key,omitempty"`
	OpenAIKey    string `json:"openai_key,omitempty"`
	Prices       Prices `json:"prices,omitempty"`
	Limits       Limits `json:"limits"`
	Spent        Scope  `json:"spent"`
	NoWebTools   bool   `json:"no_web_tools,omitempty"`
}

// Request is one line from hgate: Op is "config" (ID 1, the first line), "scope",
// "end" (of the scope of Prefix), "scopes", "total", "charge", or "ack" (of the usage
// event Seq; no answer).
type Request struct {
	ID     uint64       `json:"id,omitempty"`
	Op     string       `json:"op"`
	Config *Config      `json:"config,omitempty"`
	Name   string       `json:"name,omitempty"`
	Prefix string       `json:"prefix,omitempty"`
	Spend  *spend.Spend `json:"spend,omitempty"`
	Seq    uint64       `json:"seq,omitempty"`
}

// Reply is one line from the gateway: the answer to the request ID, or (ID 0) a usage
// event Seq that the gateway holds its response on until hgate acks it, so that hgate
// has journaled the count before the agent's CLI reads what it counts.
type Reply struct {
	ID       uint64           `json:"id,omitempty"`
	Error    string           `json:"error,omitempty"`
	Protocol int              `json:"protocol,omitempty"`
	Prefix   string           `json:"prefix,omitempty"`
	Scopes   map[string]Scope `json:"scopes,omitempty"`
	Total    *Scope           `json:"total,omitempty"`
	Seq      uint64           `json:"seq,omitempty"`
	Usage    *Usage           `json:"usage,omitempty"`
	Count    *Scope           `json:"count,omitempty"` // the usage's scope's count with it
}
