package agentout

import (
	"encoding/json"
	"strings"
)

// Describe is a short human form of one output line, for a progress line: an event of
// claude's or codex's JSON becomes what it says ("tool Bash", the reply's first line);
// any other line is returned as it is.
func Describe(line string) string {
	line = strings.TrimSpace(line)
	var ev event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &ev) != nil {
		return line
	}
	switch ev.Type {
	case "system", "thread.started":
		return "session started"
	case "assistant", "user":
		var m struct {
			Content []content `json:"content"`
		}
		_ = json.Unmarshal(ev.Message, &m)
		for _, c := range m.Content {
			switch c.Type {
			case "tool_use":
				return "tool " + c.Name
			case "tool_result":
				return "tool result"
			case "text":
				return "says: " + firstLine(c.Text)
			}
		}
		return ev.Type
	case "result":
		var text string
		_ = json.Unmarshal(ev.Result, &text)
		return "result: " + firstLine(text)
	case "item.started", "item.completed", "item.updated":
		var it codexItem
		_ = json.Unmarshal(ev.Item, &it)
		switch it.Type {
		case "command_execution":
			return "command " + firstLine(it.Command)
		case "agent_message":
			return "says: " + firstLine(it.Text)
		case "mcp_tool_call":
			return "tool " + it.Server + "." + it.Tool
		case "error":
			return "error: " + firstLine(it.Message)
		}
		return strings.ReplaceAll(it.Type, "_", " ")
	case "error":
		var msg string
		_ = json.Unmarshal(ev.Message, &msg)
		return "error: " + firstLine(msg)
	}
	return strings.ReplaceAll(ev.Type, ".", " ")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
