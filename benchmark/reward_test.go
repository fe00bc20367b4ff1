package benchmark

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hgate/hgate/internal/proc"
)

func ptr(v float64) *float64 { return &v }

func fmtReward(r *float64) string {
	if r == nil {
		return "null"
	}
	return strconv.FormatFloat(*r, 'g', -1, 64)
}

func mustDuration(t *testing.T, s string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var rewardCases = []struct {
	name   string
	out    string
	found  bool
	reward *float64
	reason string
}{
	{"number", "1\n", true, ptr(1), ""},
	{"fraction after logs", "running\nstep 2\n0.25\n", true, ptr(0.25), ""},
	{"trailing blank lines and CRLF", "0.5\r\n\r\n  \n", true, ptr(0.5), ""},
	{"spaces around", "   0.75   ", true, ptr(0.75), ""},
	{"zero", "0", true, ptr(0), ""},
	{"exponent", "5e-1", true, ptr(0.5), ""},
	{"json object", `{"reward": 0.8, "detail": "x"}`, true, ptr(0.8), ""},
	{"json object with int", `{"reward": 1}`, true, ptr(1), ""},
	{"above one", "1.7", true, nil, "reward 1.7 is outside [0, 1]"},
	{"negative", "-1", true, nil, "reward -1 is outside [0, 1]"},
	{"nan", "NaN", true, nil, "reward NaN is not a finite number"},
	{"inf", "+Inf", true, nil, "reward +Inf is not a finite number"},
	{"overflow", "1e400", true, nil, "reward 1e400 is not a finite number"},
	{"json above one", `{"reward": 1.5}`, true, nil, "reward 1.5 is outside [0, 1]"},
	{"json string reward", `{"reward": "high"}`, true, nil, `reward "high" is not a number`},
	{"json bool reward", `{"reward": true}`, true, nil, "reward true is not a number"},
	{"json null reward", `{"reward": null}`, true, nil, "reward is null"},
	{"json nan is malformed", `{"reward": NaN}`, true, nil, `malformed reward line "{\"reward\": NaN}"`},
	{"python dict", `{'reward': 1.0}`, true, nil, `malformed reward line "{'reward': 1.0}"`},
	{"json without reward", `{"score": 1}`, false, nil, ""},
	{"braces without reward", `{building}`, false, nil, ""},
	{"garbage", "garbage", false, nil, ""},
	{"number not last", "0.5\ndone", false, nil, ""},
	{"empty", "", false, nil, ""},
	{"only blanks", "\n \n\t\n", false, nil, ""},
	{"json array", "[1]", false, nil, ""},
	{"long value clipped", strings.Repeat("9", 100), true, nil, "reward " + strings.Repeat("9", 80) + "… is outside [0, 1]"},
}

func TestParseReward(t *testing.T) {
	for _, tc := range rewardCases {
		t.Run(tc.name, func(t *testing.T) {
			reward, reason, found := ParseReward([]byte(tc.out))
			if found != tc.found || reason != tc.reason || fmtReward(reward) != fmtReward(tc.reward) {
				t.Errorf("ParseReward(%q) = %s, %q, %v; want %s, %q, %v",
					tc.out, fmtReward(reward), reason, found, fmtReward(tc.reward), tc.reason, tc.found)
			}
		})
	}
}

func FuzzParseReward(f *testing.F) {
	for _, tc := range rewardCases {
		f.Add([]byte(tc.out))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		reward, reason, found := ParseReward(out)
		if !found {
			if reward != nil || reason != "" {
				t.Fatalf("not found but reward %v reason %q", reward, reason)
			}
			return
		}
		if reward != nil {
			if v := *reward; math.IsNaN(v) || v < 0 || v > 1 {
				t.Fatalf("reward %v out of range for %q", v, out)
			}
			if reason != "" {
				t.Fatalf("reward with reason %q", reason)
			}
			return
		}
		if reason == "" {
			t.Fatalf("null reward without a reason for %q", out)
		}
		// A reason quotes at most quoteLimit runes of output, escaped.
		if utf8.RuneCountInString(reason) > 4*quoteLimit+64 || !utf8.ValidString(reason) {
			t.Fatalf("reason too long or invalid: %q", reason)
		}
		if strings.ContainsFunc(reason, unicode.IsControl) || strings.ContainsRune(reason, '\u202e') {
			t.Fatalf("reason with a control character: %q", reason)
		}
	})
}

var batchCases = []struct {
	name    string
	out     string
	want    map[string]string // id -> reward or "null: reason"
	wantErr string
}{
	{"whole object", "{\n  \"a\": 1,\n  \"b\": 0.25,\n  \"c\": null\n}\n",
		map[string]string{"a": "1", "b": "0.25", "c": "null: null in batch output"}, ""},
	{"last line after logs", "starting\n{\"a\": 0, \"b\": {\"reward\": 0.5}}\n",
		map[string]string{"a": "0", "b": "0.5"}, ""},
	{"bad values", `{"a": 1.7, "b": "x", "c": -0.1, "d": [1]}`,
		map[string]string{"a": "null: reward 1.7 is outside [0, 1]", "b": `null: reward "x" is not a number`,
			"c": "null: reward -0.1 is outside [0, 1]", "d": "null: reward [1] is not a number"}, ""},
	{"garbage", "all good!\n", nil, `malformed batch output "all good!" (expected a JSON object {id: reward})`},
	{"truncated json", `{"a": 1,`, nil, `malformed batch output "{\"a\": 1," (expected a JSON object {id: reward})`},
	{"array", `[1, 2]`, nil, `malformed batch output "[1, 2]" (expected a JSON object {id: reward})`},
	{"empty", "\n\n", nil, "batch output is empty (expected a JSON object {id: reward})"},
}

func TestParseBatch(t *testing.T) {
	for _, tc := range batchCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseBatch([]byte(tc.out))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d entries, want %d: %v", len(got), len(tc.want), got)
			}
			for id, want := range tc.want {
				br := got[id]
				s := fmtReward(br.Reward)
				if br.Reward == nil {
					s += ": " + br.Reason
				}
				if s != want {
					t.Errorf("%s = %q, want %q", id, s, want)
				}
			}
		})
	}
}

func FuzzParseBatch(f *testing.F) {
	for _, tc := range batchCases {
		f.Add([]byte(tc.out))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		got, err := ParseBatch(out)
		if err != nil {
			if got != nil {
				t.Fatal("entries with an error")
			}
			return
		}
		for id, br := range got {
			if br.Reward == nil && br.Reason == "" {
				t.Fatalf("%q: null without a reason", id)
			}
			if br.Reward != nil && (*br.Reward < 0 || *br.Reward > 1 || math.IsNaN(*br.Reward)) {
				t.Fatalf("%q: reward %v out of range", id, *br.Reward)
			}
		}
	})
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[string]string{
		"10s": "10s", "20m": "20m", "1h": "1h", "1h30m": "1h30m", "90s": "1m30s", "300ms": "300ms", "2h0m5s": "2h0m5s",
	} {
		if got := formatDuration(mustDuration(t, d)); got != want {
			t.Errorf("formatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

// A reason repeats what a task printed or wrote, which the code under test chooses, and
// reaches the user's terminal (hgate bench, prepare): its control characters are written
// out, wherever it comes from.
func TestReasonsPrintable(t *testing.T) {
	esc := `\u001b[2J\u001b[Hkept (new best) \u202e`
	var reasons []string
	for _, out := range []string{
		`{"reward": null, "infra_error": "` + esc + `"}`,
		`{"reward": "` + esc + `"}`,
		"{\"reward\": \"\u009b2J\"}",
	} {
		_, reason, _, _ := parseReward([]byte(out))
		reasons = append(reasons, reason)
	}
	var tr harborTrial
	if err := json.Unmarshal([]byte(`{"task_name": "t", "exception_info": {"exception_type": "`+esc+`", "exception_message": "`+esc+`"}}`), &tr); err != nil {
		t.Fatal(err)
	}
	reasons = append(reasons, tr.result("t").Reason)
	r := &Runner{}
	_, problems := r.scoreBatch([]string{"a"}, proc.Result{}, []byte(`{"a": 1, "`+esc+`": 0}`))
	reasons = append(reasons, problems...)
	for _, reason := range reasons {
		if strings.ContainsFunc(reason, unicode.IsControl) || strings.ContainsAny(reason, "\u202e\u009b") {
			t.Errorf("reason with a control character: %q", reason)
		}
		if !strings.Contains(reason, `[2J`) && !strings.Contains(reason, `\x9b2J`) {
			t.Errorf("reason %q does not show the escape it quotes", reason)
		}
	}
}
