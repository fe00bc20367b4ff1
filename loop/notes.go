package loop

import (
	"encoding/json"
	"strings"

	"github.com/hgate/hgate/internal/human"
	"github.com/hgate/hgate/internal/statefile"
)

// notGiven fills a learnings.md field the agent's own notes did not give: hgate does not
// invent the agent's conclusions.
const notGiven = "not given"

// attempts is how many agent runs the iteration took: the main one and its repairs.
func attempts(it *Iteration) int { return it.Repairs + 1 }

// agentNotes are learnings.md's "Pattern confirmed" and "Needs from human" as the agent
// wrote them: a "Pattern confirmed: …" or "Needs from human: …" line in its message file,
// else the reflect phase's answer's pattern_confirmed / needs_from_human; "not given"
// where neither says. Both are the agent's words, shown as its notes, never acted on.
func (r *runner) agentNotes(it *Iteration) (pattern, needs string) {
	var msg string
	if data, _, err := statefile.ReadHead(r.ws.Message(), messageBound); err == nil {
		msg = string(data)
	}
	var refl map[string]any
	if it.Harness != nil {
		_ = json.Unmarshal([]byte(it.Harness.Reflection), &refl)
	}
	return noteField(msg, refl, "pattern confirmed", "pattern_confirmed"),
		noteField(msg, refl, "needs from human", "needs_from_human")
}

// noteField is the first "<label>: text" line of msg (case and markdown emphasis
// ignored), else refl[key] when it is a string, else notGiven; at most one line of 500
// bytes.
func noteField(msg string, refl map[string]any, label, key string) string {
	for line := range strings.Lines(msg) {
		l := strings.TrimLeft(strings.TrimSpace(line), "-*#> ")
		name, text, ok := strings.Cut(l, ":")
		if ok && strings.EqualFold(strings.Trim(name, "*_ "), label) {
			if text = strings.TrimSpace(strings.TrimLeft(text, "*_")); text != "" {
				return clip(text)
			}
		}
	}
	if v, ok := refl[key].(string); ok && strings.TrimSpace(v) != "" {
		return clip(strings.Join(strings.Fields(v), " "))
	}
	return notGiven
}

func clip(s string) string {
	s = human.Printable(strings.ToValidUTF8(s, "\uFFFD"), false)
	if len(s) > 500 {
		s = strings.ToValidUTF8(s[:500], "") + "…"
	}
	return s
}
