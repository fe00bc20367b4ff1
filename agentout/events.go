package agentout

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hgate/hgate/spend"
)

// event is one JSON line of claude's stream-json or codex's --json. Fields whose type
// differs between the two (claude's message is an object, codex's a string) stay raw.
type event struct {
	Type         string          `json:"type"`
	Subtype      string          `json:"subtype"`
	SessionID    string          `json:"session_id"`
	IsError      bool            `json:"is_error"`
	Result       json.RawMessage `json:"result"`
	Errors       json.RawMessage `json:"errors"`
	TotalCostUSD json.RawMessage `json:"total_cost_usd"`
	Usage        json.RawMessage `json:"usage"`
	Message      json.RawMessage `json:"message"`
	ThreadID     string          `json:"thread_id"`
	Error        json.RawMessage `json:"error"`
	Item         json.RawMessage `json:"item"`
}

// usage holds both CLIs' token counts: claude's cache_* keys, codex's cached_input_tokens.
type usage struct {
	Input       int64 `json:"input_tokens"`
	Output      int64 `json:"output_tokens"`
	CacheRead   int64 `json:"cache_read_input_tokens"`
	CacheWrite  int64 `json:"cache_creation_input_tokens"`
	CachedInput int64 `json:"cached_input_tokens"`
	CacheWriteX int64 `json:"cache_write_input_tokens"` // codex
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
	Name string `json:"name"`
}

type codexItem struct {
	Type    string `json:"type"`
	Text    string `json:"text"`
	Message string `json:"message"`
	Command string `json:"command"`
	Server  string `json:"server"`
	Tool    string `json:"tool"`
}

func (r *Run) mark(f Format) {
	if r.Format == FormatNone {
		r.Format = f
	}
}

func (r *Run) addCost(x float64) {
	if r.CostUSD == nil {
		r.CostUSD = new(float64)
	}
	*r.CostUSD = spend.AddUSD(*r.CostUSD, x)
}

// refuse records a figure the agent reported that is out of range (spend.Check): it is
// not counted, and the loop refuses the run's report, naming it.
func (r *Run) refuse(err error) {
	if len(r.Invalid) < 8 { // the first few say enough
		r.Invalid = append(r.Invalid, err.Error())
	}
}

// tokens keeps t when every kind is within range, and refuses it otherwise.
func (r *Run) tokens(what string, t Tokens) (Tokens, bool) {
	if err := t.Check(); err != nil {
		r.refuse(fmt.Errorf("%s: %w", what, err))
		return Tokens{}, false
	}
	return t, true
}

func (r *Run) event(ev *event) {
	switch ev.Type {
	case "system", "assistant", "user", "result":
		r.claude(ev)
	case "thread.started", "turn.started", "turn.completed", "turn.failed", "error",
		"item.started", "item.updated", "item.completed":
		r.codex(ev)
	}
}

// claude reads one stream-json event; the result object is the run's own account.
func (r *Run) claude(ev *event) {
	r.mark(FormatClaude)
	switch ev.Type {
	case "system":
		if r.SessionID == "" {
			r.SessionID = ev.SessionID
		}
	case "assistant", "user":
		var m struct {
			Content []content `json:"content"`
		}
		if json.Unmarshal(ev.Message, &m) == nil {
			for _, c := range m.Content {
				if c.Type == "tool_use" || c.Type == "tool_result" {
					r.worked = true
				}
			}
		}
	case "result":
		r.Final = true
		if ev.SessionID != "" {
			r.SessionID = ev.SessionID
		}
		var cost float64
		if json.Unmarshal(ev.TotalCostUSD, &cost) == nil {
			if err := spend.CheckUSD("total_cost_usd", cost); err != nil {
				r.refuse(err)
			} else {
				r.CostUSD = &cost
			}
		}
		var u usage
		if json.Unmarshal(ev.Usage, &u) == nil {
			r.Tokens, _ = r.tokens("usage", Tokens{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite})
		}
		r.Failed = ev.IsError || strings.HasPrefix(ev.Subtype, "error")
		var text string
		var errs []string
		if json.Unmarshal(ev.Result, &text) == nil && text != "" {
			r.Message = text
		} else if json.Unmarshal(ev.Errors, &errs) == nil && len(errs) > 0 {
			r.Message = strings.Join(errs, "; ")
		} else if r.Failed {
			r.Message = ev.Subtype
		}
	}
}

// codex reads one codex exec --json event: the thread is the session, each completed
// turn adds its usage.
func (r *Run) codex(ev *event) {
	r.mark(FormatCodex)
	switch ev.Type {
	case "thread.started":
		if ev.ThreadID != "" {
			r.SessionID = ev.ThreadID
		}
	case "turn.completed":
		r.Final, r.Failed, r.worked = true, false, true
		var u usage
		if json.Unmarshal(ev.Usage, &u) == nil {
			// codex counts its cached input inside input_tokens, claude beside it: keep
			// claude's form, so a total counts each token once.
			t := Tokens{Input: u.Input - u.CachedInput - u.CacheWriteX, Output: u.Output, CacheRead: u.CachedInput, CacheWrite: u.CacheWriteX}
			if t, ok := r.tokens("turn.completed usage", t); ok {
				r.Tokens = r.Tokens.Add(t)
			}
		}
	case "turn.failed":
		r.Final, r.Failed = true, true
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(ev.Error, &e) == nil && e.Message != "" {
			r.Message = e.Message
		}
	case "error":
		var msg string
		if json.Unmarshal(ev.Message, &msg) == nil && msg != "" {
			r.Message = msg
		}
	default: // item.*
		var it codexItem
		if json.Unmarshal(ev.Item, &it) != nil {
			return
		}
		switch it.Type {
		case "error":
		case "agent_message":
			r.worked = true
			if ev.Type == "item.completed" && it.Text != "" {
				r.Message = it.Text
			}
		default:
			r.worked = true
		}
	}
}
