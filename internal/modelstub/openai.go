package modelstub

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// OpenAI serves the Responses API (POST /v1/responses, streamed as server-sent events)
// for codex, as a model provider whose base_url is the returned URL + "/v1".
func OpenAI(t testing.TB, script ...Turn) *Server {
	s := &Server{script: script}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/responses", s.responses)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) })
	return serve(t, s, mux)
}

type responsesReq struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Input        []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
		// A namespace's functions (codex offers each MCP server's tools so: namespace
		// mcp__<server>, functions <tool>).
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	} `json:"tools"`
}

func (s *Server) responses(w http.ResponseWriter, hr *http.Request) {
	var req responsesReq
	if err := json.NewDecoder(hr.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	r := Request{Header: hr.Header.Clone(), Main: true, Session: hr.Header.Get("Session-Id"), System: req.Instructions}
	namespaces := map[string][2]string{} // flat name → namespace, function
	for _, tl := range req.Tools {
		r.Tools = append(r.Tools, tl.Name)
		for _, f := range tl.Tools {
			flat := tl.Name + "__" + f.Name
			r.Tools = append(r.Tools, flat)
			namespaces[flat] = [2]string{tl.Name, f.Name}
		}
	}
	for _, in := range req.Input {
		switch {
		case in.Type == "function_call" || in.Type == "custom_tool_call" || in.Role == "assistant":
			r.Turn++
		case in.Type == "function_call_output" || in.Type == "custom_tool_call_output":
			var out string
			if json.Unmarshal(in.Output, &out) != nil {
				out = text(in.Output)
			}
			r.ToolResult = out
		case in.Role == "developer":
			r.System += "\n" + text(in.Content)
		case in.Role == "user":
			t := text(in.Content)
			if strings.HasPrefix(t, "<") || strings.HasPrefix(t, "# AGENTS.md") {
				r.System += "\n" + t
			}
			if t == "" || strings.HasPrefix(t, "<environment_context>") || strings.HasPrefix(t, "# AGENTS.md") || strings.HasPrefix(t, "<user_instructions>") {
				continue
			}
			if r.FirstUser == "" {
				r.FirstUser = t
			}
			r.LastUser = t
		}
	}
	s.add(r)
	turn := s.turn(r)
	id := "resp_stub_" + strconv.Itoa(len(s.Requests()))
	w.Header().Set("Content-Type", "text/event-stream")
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id}})
	var item map[string]any
	switch {
	case turn.Tool != "":
		b, _ := json.Marshal(turn.Input)
		call := "call_stub_" + strconv.Itoa(r.Turn)
		item = map[string]any{"type": "function_call", "id": "fc_" + call, "call_id": call, "name": turn.Tool, "arguments": string(b)}
		if ns, ok := namespaces[turn.Tool]; ok {
			item["namespace"], item["name"] = ns[0], ns[1]
		}
	case turn.Command != "":
		item = s.shellCall(r.Tools, turn.Command, r.Turn)
	default:
		item = map[string]any{"type": "message", "role": "assistant", "id": "msg_" + id,
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text}}}
	}
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": id,
		"usage": map[string]any{"input_tokens": Usage.Input, "input_tokens_details": map[string]any{"cached_tokens": 0},
			"output_tokens": Usage.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": Usage.Input + Usage.Output}}})
}

// shellCall is a call of whichever shell tool codex offered.
func (s *Server) shellCall(tools []string, command string, n int) map[string]any {
	call := "call_stub_" + strconv.Itoa(n)
	has := func(name string) bool {
		for _, t := range tools {
			if t == name {
				return true
			}
		}
		return false
	}
	var args any
	name := "shell"
	switch {
	case has("exec_command"):
		name, args = "exec_command", map[string]any{"cmd": command}
	case has("shell_command"):
		name, args = "shell_command", map[string]any{"command": command}
	default:
		args = map[string]any{"command": []string{"sh", "-c", command}}
	}
	b, _ := json.Marshal(args)
	return map[string]any{"type": "function_call", "id": "fc_" + call, "call_id": call, "name": name, "arguments": string(b)}
}

// CodexProvider is codex's -c options for a model provider at the stub, its key in the
// environment variable key.
func CodexProvider(url, key string) []string {
	return []string{"-c", "model_provider=hgatestub", "-c", "model=gpt-5", "-c", "model_providers.hgatestub.name=hgatestub",
		"-c", "model_providers.hgatestub.base_url=" + url + "/v1", "-c", "model_providers.hgatestub.wire_api=responses",
		"-c", "model_providers.hgatestub.env_key=" + key}
}

// Unauthorized answers every request with 401, as a model API does to a key it refuses.
func Unauthorized(t testing.TB) *Server {
	s := &Server{script: []Turn{{Text: "unused"}}}
	return serve(t, s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(Request{Header: r.Header.Clone()})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`))
	}))
}
