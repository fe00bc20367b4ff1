package modelstub

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// Anthropic serves the Messages API (POST /v1/messages, streamed as server-sent events)
// for claude at ANTHROPIC_BASE_URL = the returned URL.
func Anthropic(t testing.TB, script ...Turn) *Server {
	s := &Server{script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	mux.HandleFunc("POST /v1/messages/count_tokens", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"input_tokens":100}`))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	return serve(t, s, mux)
}

type anthropicReq struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	} `json:"tools"`
	System json.RawMessage `json:"system"`
}

func (s *Server) anthropic(w http.ResponseWriter, hr *http.Request) {
	var req anthropicReq
	if err := json.NewDecoder(hr.Body).Decode(&req); err != nil {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	r := Request{Header: hr.Header.Clone(), Session: hr.Header.Get("X-Claude-Code-Session-Id"), System: string(req.System)}
	if len(req.Messages) > 0 {
		r.System += string(req.Messages[0].Content)
	}
	for _, tl := range req.Tools {
		r.Tools = append(r.Tools, tl.Name)
		r.System += "\n" + tl.Description
		if tl.Name == "Bash" {
			r.Main = true
		}
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "assistant":
			r.Turn++
		case "user":
			if t := text(m.Content); t != "" {
				if r.FirstUser == "" {
					r.FirstUser = t
				}
				r.LastUser = t
			}
			r.ToolResult = toolResult(m.Content)
		}
	}
	s.add(r)
	turn := Turn{Text: "ok"}
	if r.Main {
		turn = s.turn(r)
	}
	id := "msg_stub_" + strconv.Itoa(len(s.Requests()))
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{map[string]any{"type": "text", "text": turn.Text}}, "stop_reason": "end_turn",
			"usage": map[string]any{"input_tokens": Usage.Input, "output_tokens": Usage.Output}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": Usage.Input, "output_tokens": 1}}})
	stop := "end_turn"
	if turn.Command != "" || turn.Tool != "" {
		stop = "tool_use"
		name, in := "Bash", any(map[string]string{"command": turn.Command, "description": "run the scripted command"})
		if turn.Tool != "" {
			name, in = turn.Tool, turn.Input
		}
		input, _ := json.Marshal(in)
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": "toolu_stub_" + strconv.Itoa(r.Turn), "name": name, "input": map[string]any{}}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	} else {
		sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": turn.Text}})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": Usage.Output}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// toolResult is the text of the tool_result blocks of a user message.
func toolResult(raw json.RawMessage) string {
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "tool_result" {
			b.WriteString(text(bl.Content))
		}
	}
	return b.String()
}
