package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"strings"
	"time"
)

// parseManifest normalizes an MCP manifest: the fields HarnessGym reads, in every form it
// accepts.
func parseManifest(data []byte) (*MCP, string) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, "not a JSON object: " + err.Error()
	}
	m := &MCP{}
	var problems []string
	bad := func(format string, a ...any) { problems = append(problems, fmt.Sprintf(format, a...)) }
	if err := decodeField(raw, "name", &m.Name); err != nil {
		bad("name: not a string")
	}
	if err := decodeField(raw, "command", &m.Command); err != nil || strings.TrimSpace(m.Command) == "" {
		bad("command: missing or not a string (expected the program that starts the server)")
	}
	if err := decodeField(raw, "args", &m.Args); err != nil {
		bad("args: not a list of strings")
	}
	var cwd string
	if err := decodeField(raw, "cwd", &cwd); err != nil {
		bad("cwd: not a string")
	}
	if c, problem := relCwd(cwd); problem != "" {
		bad("cwd: %s", problem)
	} else {
		m.Cwd = c
	}
	if err := decodeField(raw, "enabled_tools", &m.EnabledTools); err != nil {
		bad("enabled_tools: not a list of strings")
	}
	var timeouts map[string]json.RawMessage
	if err := decodeField(raw, "timeouts", &timeouts); err != nil {
		bad("timeouts: not an object")
	}
	m.Startup = timeout(raw, timeouts, []string{"startup_timeout_sec"}, []string{"startup_seconds", "startup_timeout_sec"}, []string{"initialize_ms", "startup_ms"}, DefaultStartup)
	m.Tool = timeout(raw, timeouts, []string{"tool_timeout_sec"}, []string{"tool_seconds", "tool_timeout_sec"}, []string{"tool_call_ms", "tool_ms"}, DefaultTool)
	m.SelfTestTime = timeout(raw, timeouts, []string{"self_test_timeout_sec", "test_timeout_sec"}, []string{"self_test_seconds", "self_test_timeout_sec"}, []string{"self_test_ms", "test_ms"}, DefaultSelfTest)
	if st, ok := raw["self_test"]; ok {
		argv, t, problem := selfTest(st, m)
		if problem != "" {
			bad("self_test: %s", problem)
		}
		m.SelfTest = argv
		if t > 0 {
			m.SelfTestTime = t
		}
	}
	if m.Args == nil {
		m.Args = []string{}
	}
	return m, strings.Join(problems, "; ")
}

// decodeField decodes raw[key] into v when it is there and not null.
func decodeField(raw map[string]json.RawMessage, key string, v any) error {
	r, ok := raw[key]
	if !ok || string(r) == "null" {
		return nil
	}
	return json.Unmarshal(r, v)
}

// relCwd keeps a server's working folder inside the repository. An absolute one is the
// agent's own worktree, which the clean room is not: it means the root, as in HarnessGym.
func relCwd(cwd string) (string, string) {
	switch {
	case cwd == "" || strings.HasPrefix(cwd, "/"):
		return "", ""
	case strings.ContainsRune(cwd, 0):
		return "", "holds a NUL byte"
	}
	c := path.Clean(cwd)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Sprintf("%q leaves the repository (expected a folder inside it)", cwd)
	}
	if c == "." {
		c = ""
	}
	return c, ""
}

// timeout reads a timeout from its top-level keys (seconds), then the timeouts object's
// second and millisecond keys, as HarnessGym does.
func timeout(raw, timeouts map[string]json.RawMessage, top, secs, millis []string, def time.Duration) time.Duration {
	for _, k := range top {
		if v, ok := number(raw[k]); ok {
			return seconds(v)
		}
	}
	for _, k := range secs {
		if v, ok := number(timeouts[k]); ok {
			return seconds(v)
		}
	}
	for _, k := range millis {
		if v, ok := number(timeouts[k]); ok {
			return max(seconds(v/1000), time.Second)
		}
	}
	return def
}

func number(r json.RawMessage) (float64, bool) {
	var v float64
	if len(r) == 0 || json.Unmarshal(r, &v) != nil || v <= 0 || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// seconds is v seconds, at most a day.
func seconds(v float64) time.Duration { return time.Duration(min(v, 86400) * float64(time.Second)) }

// selfTest reads self_test in any of its forms: true (the server's command with
// --self-test), a list, a shell-like string, or {command, args, timeout_*}.
func selfTest(r json.RawMessage, m *MCP) ([]string, time.Duration, string) {
	var b bool
	if json.Unmarshal(r, &b) == nil {
		if b {
			return append(append([]string{m.Command}, m.Args...), "--self-test"), 0, ""
		}
		return nil, 0, ""
	}
	var list []string
	if json.Unmarshal(r, &list) == nil {
		if len(list) == 0 {
			return nil, 0, "an empty list (expected a command)"
		}
		return list, 0, ""
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		argv, err := splitWords(s)
		if err != nil || len(argv) == 0 {
			return nil, 0, fmt.Sprintf("%q is not a command", s)
		}
		return argv, 0, ""
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(r, &obj) != nil {
		return nil, 0, "not true, a list, a string or an object"
	}
	var argv []string
	cmd := obj["command"]
	if json.Unmarshal(cmd, &list) == nil && len(list) > 0 {
		argv = list
	} else if json.Unmarshal(cmd, &s) == nil && s != "" {
		argv, _ = splitWords(s)
	}
	if len(argv) == 0 {
		return nil, 0, "command: missing (expected a list or a string)"
	}
	var args []string
	if err := decodeField(obj, "args", &args); err != nil {
		return nil, 0, "args: not a list of strings"
	}
	argv = append(argv, args...)
	t := timeout(obj, nil, []string{"timeout_seconds", "timeout_sec"}, nil, nil, 0)
	if v, ok := number(obj["timeout_ms"]); ok && t == 0 {
		t = max(seconds(v/1000), time.Second)
	}
	return argv, t, ""
}

// splitWords splits s as a POSIX shell splits words: blanks separate, single and double
// quotes group, a backslash escapes (Python's shlex.split, which HarnessGym uses).
func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			inWord = true
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("no closing quotation")
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, errors.New("no closing quotation")
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}
