package agentout

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/spend"
)

func usd(x float64) *float64 { return &x }

// TestFixtures: the real CLIs' output (Claude Code 2.1.197 and codex-cli 0.169.0, against
// internal/modelstub's stand-ins of their model APIs; claude's "Not logged in" with no
// credentials at all) reads as what each run was.
func TestFixtures(t *testing.T) {
	for _, tc := range []struct {
		file       string
		format     Format
		session    string
		cost       *float64
		tokens     Tokens
		failed     bool
		notStarted string
		message    string
	}{
		{"claude-not-logged-in.jsonl", FormatClaude, "", usd(0), Tokens{}, true,
			"Not logged in · Please run /login", "Not logged in · Please run /login"},
		{"claude-tool-use.jsonl", FormatClaude, "", usd(0.02), Tokens{Input: 2000, Output: 400}, false, "", "done"},
		{"claude-resumed.jsonl", FormatClaude, "", usd(0.01), Tokens{Input: 1000, Output: 200}, false, "", "done"},
		{"codex-tool-use.jsonl", FormatCodex, "", nil, Tokens{Input: 2000, Output: 400}, false, "", "done"},
		{"codex-resumed.jsonl", FormatCodex, "", nil, Tokens{Input: 3000, Output: 600}, false, "", "done"},
		{"codex-unauthorized.jsonl", FormatCodex, "", nil, Tokens{}, true,
			"unexpected status 401 Unauthorized: Incorrect API key provided", ""},
	} {
		t.Run(tc.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			if r.Format != tc.format || r.SessionID == "" || tc.session != "" && r.SessionID != tc.session {
				t.Errorf("format %q session %q, want %q %q", r.Format, r.SessionID, tc.format, tc.session)
			}
			if (r.CostUSD == nil) != (tc.cost == nil) || r.CostUSD != nil && *r.CostUSD != *tc.cost {
				t.Errorf("cost %v, want %v", r.CostUSD, tc.cost)
			}
			if r.Tokens != tc.tokens || r.Failed != tc.failed || !r.Final {
				t.Errorf("tokens %+v failed %v final %v, want %+v %v true", r.Tokens, r.Failed, r.Final, tc.tokens, tc.failed)
			}
			why, ok := r.NotStarted()
			if ok != (tc.notStarted != "") || !strings.HasPrefix(why, tc.notStarted) {
				t.Errorf("not started %v %q, want %q", ok, why, tc.notStarted)
			}
			if tc.message != "" && r.Message != tc.message {
				t.Errorf("message %q, want %q", r.Message, tc.message)
			}
		})
	}
}

// TestLines: a custom agent's HGATE_SESSION (the last counts) and HGATE_COST_USD lines
// (each adds; a value that is not a finite non-negative number is ignored), among others.
func TestLines(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		session   string
		cost      *float64
		format    Format
	}{
		{"none", "working\ndone\n", "", nil, FormatNone},
		{"session", "HGATE_SESSION=abc-1\nwork\nHGATE_SESSION=abc-2\n", "abc-2", nil, FormatLines},
		{"costs add", "HGATE_COST_USD=0.25\nHGATE_COST_USD=1.5\r\n", "", usd(1.75), FormatLines},
		{"bad costs", "HGATE_COST_USD=-1\nHGATE_COST_USD=NaN\nHGATE_COST_USD=Inf\nHGATE_COST_USD=x\nHGATE_COST_USD=0.5", "", usd(0.5), FormatLines},
		{"session with a space", "HGATE_SESSION=a b\nHGATE_SESSION=\n", "", nil, FormatNone},
		{"not at line start", "say HGATE_SESSION=x\n", "", nil, FormatNone},
		{"garbage json", "{\"type\":\"result\",\n{not json}\n[1]\n", "", nil, FormatNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse(strings.NewReader(tc.out))
			if err != nil {
				t.Fatal(err)
			}
			if r.SessionID != tc.session || r.Format != tc.format || (r.CostUSD == nil) != (tc.cost == nil) || r.CostUSD != nil && *r.CostUSD != *tc.cost {
				t.Fatalf("read %q %v %q, want %q %v %q", r.SessionID, r.CostUSD, r.Format, tc.session, tc.cost, tc.format)
			}
			if _, ok := r.NotStarted(); ok {
				t.Fatal("a custom agent's lines read as not started")
			}
		})
	}
}

// TestNotStartedNeedsNoWork: an error after work (tokens spent, a tool used) is a failed
// run, not one that never started.
func TestNotStartedNeedsNoWork(t *testing.T) {
	for _, out := range []string{
		`{"type":"result","subtype":"error_during_execution","is_error":true,"session_id":"s","total_cost_usd":0.3,"usage":{"input_tokens":9}}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash"}]}}` + "\n" +
			`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500","session_id":"s","total_cost_usd":0}`,
		`{"type":"thread.started","thread_id":"t"}` + "\n" + `{"type":"item.completed","item":{"type":"command_execution","command":"ls"}}` + "\n" +
			`{"type":"turn.failed","error":{"message":"stream disconnected"}}`,
	} {
		r, _ := Parse(strings.NewReader(out))
		if !r.Failed {
			t.Errorf("%s: not read as failed", out)
		}
		if why, ok := r.NotStarted(); ok {
			t.Errorf("%s: read as not started (%q)", out, why)
		}
	}
	r, _ := Parse(strings.NewReader(`{"type":"result","subtype":"error_max_turns","is_error":false,"errors":["max turns"],"session_id":"s"}`))
	if why, ok := r.NotStarted(); !ok || why != "max turns" {
		t.Errorf("an error subtype with nothing spent: %v %q", ok, why)
	}
}

// TestLongLines: a line longer than the parser keeps (a tool's huge output) is skipped,
// and the result after it is still read.
func TestLongLines(t *testing.T) {
	out := `{"type":"user","message":{"content":"` + strings.Repeat("x", maxLine+10) + `"}}` + "\n" +
		`{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s1","total_cost_usd":0.5}` + "\n"
	r, err := Parse(strings.NewReader(out))
	if err != nil || r.SessionID != "s1" || r.CostUSD == nil || *r.CostUSD != 0.5 {
		t.Fatalf("%+v %v", r, err)
	}
}

// TestDescribe: the progress line's short form of an event.
func TestDescribe(t *testing.T) {
	for in, want := range map[string]string{
		`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{}}]}}`: "tool Bash",
		`{"type":"assistant","message":{"content":[{"type":"text","text":"Looking\nat it"}]}}`:      "says: Looking",
		`{"type":"result","result":"done"}`: "result: done",
		`{"type":"item.started","item":{"type":"command_execution","command":"/bin/bash -lc 'go test'"}}`: "command /bin/bash -lc 'go test'",
		`{"type":"turn.completed","usage":{}}`: "turn completed",
		"plain text":                           "plain text",
	} {
		if got := Describe(in); got != want {
			t.Errorf("Describe(%s) = %q, want %q", in, got, want)
		}
	}
}

// FuzzParse: no output makes the parser fail, panic, or report a negative spend, and a
// run read as not started never spent anything. Seeded from the real CLIs' fixtures.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("HGATE_SESSION=x\nHGATE_COST_USD=0.1\n"))
	// Figures out of range, which are refused (spend.Check), never counted.
	for _, x := range []string{"1.7e308", "NaN", "-1", "1e400", "+Inf", "0x1p1023", "1000000.01"} {
		f.Add([]byte("HGATE_COST_USD=" + x + "\nHGATE_COST_USD=" + x + "\n"))
		f.Add([]byte(`{"type":"result","total_cost_usd":` + x + `,"usage":{"input_tokens":1}}`))
	}
	f.Add([]byte(`{"type":"result","total_cost_usd":0.1,"usage":{"input_tokens":9223372036854775807,"output_tokens":-5}}`))
	f.Add([]byte(`{"type":"turn.completed","usage":{"input_tokens":5,"cached_input_tokens":9}}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":1000000000001}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(strings.NewReader(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		if r.CostUSD != nil && !(*r.CostUSD >= 0 && *r.CostUSD <= 1e15) {
			t.Fatalf("cost %v", *r.CostUSD)
		}
		if _, err := json.Marshal(r.Spent()); err != nil {
			t.Fatalf("the spend cannot be written: %v", err)
		}
		if r.Tokens.Input < 0 || r.Tokens.Output < 0 || r.Tokens.CacheRead < 0 || r.Tokens.CacheWrite < 0 || r.Tokens.Total() < 0 {
			t.Fatalf("tokens %+v", r.Tokens)
		}
		if _, ok := r.NotStarted(); ok && (r.Tokens.Total() != 0 || r.CostUSD != nil && *r.CostUSD != 0) {
			t.Fatalf("not started after spending: %+v", r)
		}
		for _, l := range strings.Split(string(data), "\n") {
			_ = Describe(l)
		}
	})
}

// TestRefusals: a write the system refused, as each agent shows it — claude's tool
// result, codex's command output, a plain agent's stderr — is counted with where it was
// seen and its first line; other output is not.
func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      string
	}{
		{"claude", `{"type":"system","subtype":"init","session_id":"s"}
{"type":"user","message":{"content":[{"type":"tool_result","is_error":true,"content":"/bin/bash: line 1: check.sh: Permission denied"}]},"session_id":"s"}
{"type":"result","subtype":"success","is_error":false,"result":"I could not edit check.sh.","session_id":"s","total_cost_usd":0.01}`,
			`writes outside allow were refused (1 in claude's tool results, e.g. "/bin/bash: line 1: check.sh: Permission denied")`},
		{"codex", `{"type":"thread.started","thread_id":"t"}
{"type":"item.completed","item":{"type":"command_execution","command":"bash -lc 'echo x >> hgate.yaml'","aggregated_output":"bash: line 1: hgate.yaml: Read-only file system\n","exit_code":1,"status":"failed"}}
{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}`,
			`writes outside allow were refused (1 in codex's command output, e.g. "bash: line 1: hgate.yaml: Read-only file system")`},
		{"plain", "editing\nsh: 1: cannot create check.sh: Permission denied\ncp: cannot create regular file 'x': Operation not permitted\n",
			`writes outside allow were refused (2 in the agent's output, e.g. "sh: 1: cannot create check.sh: Permission denied")`},
		{"none", "all good\n", ""},
	} {
		r, err := Parse(strings.NewReader(tc.out))
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Refused.String(); got != tc.want {
			t.Errorf("%s: %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// The run's report is a spend meter.
var _ spend.Meter = Run{}

// TestParseRefusesOutOfRange: a figure that is not finite or outside spend's bounds is
// named in Invalid and not counted; the figures within range still are.
func TestParseRefusesOutOfRange(t *testing.T) {
	for _, tc := range []struct{ in, invalid string }{
		{"HGATE_COST_USD=1.7e308\nHGATE_COST_USD=1.7e308\nHGATE_COST_USD=0.5\n", "HGATE_COST_USD 1.7e+308 is outside 0 ≤ usd ≤ 1e+06"},
		{"HGATE_COST_USD=NaN\nHGATE_COST_USD=0.5\n", "HGATE_COST_USD NaN is outside"},
		{"HGATE_COST_USD=-1\nHGATE_COST_USD=0.5\n", "HGATE_COST_USD -1 is outside"},
		{"HGATE_COST_USD=1e400\nHGATE_COST_USD=0.5\n", "HGATE_COST_USD 1e400 is outside"},
		{`{"type":"result","total_cost_usd":2e6}` + "\nHGATE_COST_USD=0.5\n", "total_cost_usd 2e+06 is outside"},
		{`{"type":"turn.completed","usage":{"input_tokens":2000000000000}}` + "\nHGATE_COST_USD=0.5\n", "turn.completed usage: input tokens 2000000000000 is outside"},
	} {
		r, err := Parse(strings.NewReader(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Invalid) == 0 || !strings.HasPrefix(r.Invalid[0], tc.invalid) {
			t.Errorf("%q: invalid %q, want %q", tc.in, r.Invalid, tc.invalid)
		}
		if r.Tokens.Total() != 0 {
			t.Errorf("%q: tokens %+v counted", tc.in, r.Tokens)
		}
		if _, err := json.Marshal(r.Spent()); err != nil {
			t.Errorf("%q: %v", tc.in, err)
		}
	}
}
