// Package agentout reads what a coding agent printed about its own run: the session it
// can be resumed in, what it spent, and whether it worked at all. It knows Claude Code's
// stream-json (`claude -p --output-format stream-json --verbose`), codex's JSON Lines
// (`codex exec --json`) and the HGATE_SESSION= and HGATE_COST_USD= lines any other agent
// may print. It never fails on what it does not know: an unknown line is skipped.
package agentout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"

	"github.com/hgate/hgate/spend"
)

// Format names the output a run was read from.
type Format string

// Formats.
const (
	FormatNone   Format = ""       // nothing recognised
	FormatClaude Format = "claude" // Claude Code stream-json (or --output-format json)
	FormatCodex  Format = "codex"  // codex exec --json
	FormatLines  Format = "lines"  // HGATE_SESSION= / HGATE_COST_USD= lines
)

// Tokens are the tokens a run reported, as its CLI counts them.
type Tokens = spend.Tokens

// Run is what an agent's output said about its run.
type Run struct {
	Format    Format
	SessionID string
	// CostUSD is what the agent reported it spent (claude's total_cost_usd, the sum of a
	// custom agent's HGATE_COST_USD lines); nil when it reported no cost (codex).
	CostUSD *float64
	Tokens  Tokens
	// Final is true once the run's own end was reported (claude's result object, a codex
	// turn that completed or failed).
	Final bool
	// Failed: the agent reported that its run did not work (claude's is_error or an error
	// subtype, a codex turn.failed).
	Failed bool
	// Message is the agent's own last words: claude's result text, codex's last error or
	// agent message.
	Message string
	// Refused is what the output showed of operations the system refused (a write the
	// sandbox stopped).
	Refused Refusals
	// Invalid names each figure the agent reported that hgate refused (not finite, or
	// outside spend.MaxUSD or spend.MaxTokens): none of them is counted.
	Invalid []string
	// worked counts signs of work: a tool used, a codex item other than an error, tokens.
	worked bool
}

// Cumulative reports whether the run's tokens count its whole session so far rather
// than this run alone: measured with the CLIs, a resumed codex thread reports the
// thread's usage (cumulative), a resumed claude session this call's (per call).
func (r Run) Cumulative() bool { return r.Format == FormatCodex }

// Spent is the run's report as a spend meter reads it (CostUSD zero when it reported none).
func (r Run) Spent() spend.Spend {
	s := spend.Spend{Tokens: r.Tokens}
	if r.CostUSD != nil {
		s.USD = *r.CostUSD
	}
	return s
}

// NotStarted returns the agent's own words when it reported a failure before it did any
// work at all — nothing spent, no tool used, no turn completed — such as claude's "Not
// logged in · Please run /login" or a codex turn that failed on its first request. Trying
// again cannot help such a run.
func (r Run) NotStarted() (string, bool) {
	if !r.Failed || r.worked || r.Tokens.Total() > 0 || r.CostUSD != nil && *r.CostUSD > 0 {
		return "", false
	}
	msg := strings.TrimSpace(r.Message)
	if msg == "" {
		msg = "the agent reported an error before it did anything"
	}
	return msg, true
}

// maxLine bounds the bytes kept of one line: longer lines (a tool's huge output) are
// skipped, never the final result object, which holds only the reply.
const maxLine = 16 << 20

// Parse reads an agent's output to its end. The only error is the reader's.
func Parse(rd io.Reader) (Run, error) {
	var r Run
	br := bufio.NewReaderSize(rd, 64<<10)
	var line []byte
	skip := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !skip {
			if len(line)+len(chunk) > maxLine {
				skip, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if !skip {
			r.Line(line)
		}
		line, skip = line[:0], false
		if errors.Is(err, io.EOF) {
			return r, nil
		}
		if err != nil {
			return r, err
		}
	}
}

// Line takes one line of output (its newline optional).
func (r *Run) Line(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	if line[0] == '{' {
		var ev event
		if json.Unmarshal(line, &ev) == nil {
			r.event(&ev)
		}
		r.refusal(line)
		return
	}
	r.refusal(line)
	r.hgateLine(string(line))
}

// hgateLine reads a custom agent's HGATE_SESSION=<id> (the last one counts) and
// HGATE_COST_USD=<x> (each adds) lines.
func (r *Run) hgateLine(s string) {
	if v, ok := strings.CutPrefix(s, "HGATE_SESSION="); ok {
		if v = strings.TrimSpace(v); v != "" && !strings.ContainsAny(v, " \t") {
			r.SessionID = v
			r.mark(FormatLines)
		}
		return
	}
	if v, ok := strings.CutPrefix(s, "HGATE_COST_USD="); ok {
		r.mark(FormatLines)
		x, err := spend.ParseUSD("HGATE_COST_USD", v)
		if err != nil {
			r.refuse(err)
			return
		}
		r.addCost(x)
	}
}
