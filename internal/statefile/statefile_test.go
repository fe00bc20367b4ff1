package statefile

//lint:file-ignore SA5008 `required` is internal/statefile's own json tag option (the key must be present), which encoding/json ignores

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/proc"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "suite.json")
	for _, content := range []string{"first\n", "second, longer\n", ""} {
		if err := WriteAtomic(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != content {
			t.Errorf("content = %q, want %q", got, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != Mode {
		t.Errorf("mode = %v, want %v", fi.Mode().Perm(), Mode)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file (a temp file was left behind?)", len(entries))
	}
}

func TestWriteAtomicRefusals(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.json")
	if err := os.WriteFile(target, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "suite.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub.json")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path, want string
	}{
		{link, "refusing to write " + link + ": it is a symlink (expected a regular file)"},
		{sub, "refusing to write " + sub + ": it is not a regular file"},
	}
	for _, tt := range tests {
		err := WriteAtomic(tt.path, []byte("new\n"))
		if err == nil || err.Error() != tt.want {
			t.Errorf("WriteAtomic(%s) = %v, want %q", tt.path, err, tt.want)
		}
	}
	if got, _ := os.ReadFile(target); string(got) != "keep\n" {
		t.Errorf("symlink target changed to %q", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("symlink was replaced")
	}
	if err := WriteAtomic(filepath.Join(dir, "missing", "x.json"), nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("write into a missing directory: %v, want fs.ErrNotExist", err)
	}
}

type inner struct {
	Name string `json:"name,required"`
}

type target struct {
	Tasks   []string            `json:"tasks,required"`
	Score   float64             `json:"score"`
	Seed    int64               `json:"seed"`
	Count   uint                `json:"count"`
	On      bool                `json:"on"`
	Results map[string]*float64 `json:"results"`
	Inner   *inner              `json:"inner"`
	Items   []inner             `json:"items"`
	Any     any                 `json:"any"`
	When    time.Time           `json:"when"`
}

func TestDecodeJSONErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"empty", "", "f.json: file is empty (expected a JSON object)"},
		{"blank", " \n\t\n", "f.json: file is empty (expected a JSON object)"},
		{"bad value", "{\n  \"tasks\": x\n}", `f.json:2:12: unexpected character 'x' (expected a value)`},
		{"trailing comma", "{\"tasks\": [],\n}", `f.json:2:1: unexpected character '}' (expected a key in double quotes)`},
		{"missing colon", `{"tasks" []}`, `f.json:1:10: unexpected character '[' (expected ':' after the key)`},
		{"truncated", "{\"tasks\": [\"a\"", `f.json:1:15: unexpected end of file (expected ',' or ']')`},
		{"unclosed string", "{\"tasks\": [\"a", `f.json:1:12: string never closed (expected a closing '"')`},
		{"single quotes", `{'tasks': []}`, `f.json:1:2: unexpected character '\'' (expected a key in double quotes)`},
		{"bad literal", `{"on": tru}`, `f.json:1:11: unexpected character '}' (expected "true")`},
		{"leading zero", `{"seed": 01}`, `f.json:1:11: unexpected character '1' (expected ',' or '}')`},
		{"bare minus", `{"seed": -}`, `f.json:1:11: unexpected character '}' (expected a digit)`},
		{"NaN", `{"score": NaN}`, `f.json:1:11: unexpected character 'N' (expected a value)`},
		{"bad escape", `{"tasks": ["a\q"]}`, `f.json:1:14: invalid escape "\\q" in string`},
		{"control char", "{\"tasks\": [\"a\tb\"]}", `f.json:1:14: control character in string (expected it escaped, like \n)`},
		{"trailing data", "{\"tasks\": []}\n{}", `f.json:2:1: unexpected character '{' after the JSON value (expected end of file)`},
		{"trailing garbage", "{\"tasks\": []} x", `f.json:1:15: unexpected character 'x' after the JSON value (expected end of file)`},
		{"column in characters", "{\"tasks\": [\"é\", x]}", `f.json:1:17: unexpected character 'x' (expected a value)`},
		{"not an object", `["a"]`, `f.json:1:1: value is an array (expected an object)`},
		{"string for number", "{\"tasks\": [],\n \"score\": \"x\"}", `f.json:2:11: score: "x" is a string (expected a number)`},
		{"number for string", `{"tasks": ["a", 7]}`, `f.json:1:17: tasks[1]: 7 is a number (expected a string)`},
		{"object for array", `{"tasks": {}}`, `f.json:1:11: tasks: value is an object (expected an array)`},
		{"null for array", `{"tasks": null}`, `f.json:1:11: tasks: value is null (expected an array)`},
		{"bool for number", `{"tasks": [], "score": true}`, `f.json:1:24: score: true is a boolean (expected a number)`},
		{"fraction for int", `{"tasks": [], "seed": 4.5}`, `f.json:1:23: seed: 4.5 is not a whole number (expected an integer)`},
		{"int overflow", `{"tasks": [], "seed": 99999999999999999999}`, `f.json:1:23: seed: 99999999999999999999 is out of range (expected an integer)`},
		{"negative uint", `{"tasks": [], "count": -1}`, `f.json:1:24: count: -1 is not a whole number (expected a non-negative integer)`},
		{"float overflow", `{"tasks": [], "score": 1e999}`, `f.json:1:24: score: 1e999 is out of range (expected a number)`},
		{"map value", `{"tasks": [], "results": {"a.b": "1"}}`, `f.json:1:34: results["a.b"]: "1" is a string (expected a number or null)`},
		{"nested struct", `{"tasks": [], "inner": {"name": 1}}`, `f.json:1:33: inner.name: 1 is a number (expected a string)`},
		{"bad time", `{"tasks": [], "when": "soon"}`, `f.json:1:23: when: "soon" is not valid: parsing time "soon" as "2006-01-02T15:04:05Z07:00": cannot parse "soon" as "2006"`},
		{"unknown field", "{\n  \"tasks\": [],\n  \"treshold\": 0.8\n}", `f.json:3: unknown field "treshold" (expected one of "tasks", "score", "seed", "count", "on", "results", "inner", "items", "any", "when")`},
		{"unknown nested field", "{\"tasks\": [],\n\"items\": [{\"name\": \"a\", \"x\": 1}]}", `f.json:2: unknown field "items[0].x" (expected only "name")`},
		{"duplicate key", `{"tasks": [], "tasks": []}`, `f.json:1:15: duplicate key "tasks"`},
		{"duplicate map key", `{"tasks": [], "results": {"a": 1, "a": 0}}`, `f.json:1:35: results: duplicate key "a"`},
		{"missing field", `{"score": 1}`, `f.json:1:1: missing field "tasks" (expected a "tasks" key holding an array)`},
		{"missing nested field", `{"tasks": [], "inner": {}}`, `f.json:1:24: inner: missing field "name" (expected a "name" key holding a string)`},
		{"every problem at once", "{\"tasks\": [1, 2],\n\"score\": \"high\",\n\"zzz\": 0}",
			"f.json:1:12: tasks[0]: 1 is a number (expected a string)\n" +
				"f.json:1:15: tasks[1]: 2 is a number (expected a string)\n" +
				"f.json:2:10: score: \"high\" is a string (expected a number)\n" +
				`f.json:3: unknown field "zzz" (expected one of "tasks", "score", "seed", "count", "on", "results", "inner", "items", "any", "when")`},
		{"deep nesting", `{"tasks": [], "any": ` + strings.Repeat("[", 1001), `f.json:1:1021: nesting deeper than 1000 levels`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v target
			err := DecodeJSON("f.json", []byte(tt.data), &v)
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("error:\n%s\nwant:\n%s", err, tt.want)
			}
		})
	}
}

func TestDecodeJSONValues(t *testing.T) {
	data := "\xef\xbb\xbf" + `{
  "tasks": ["a", "\u00e9\ud83d\ude00", "q\"\\/\n"],
  "score": -1.5e-3,
  "seed": -42,
  "count": 7,
  "on": true,
  "results": {"x": null, "y": 1, "z": 0.25},
  "inner": null,
  "items": [],
  "any": [1, "two", null, {"k": false}],
  "when": "2026-11-22T03:12:33+00:00"
}`
	var v target
	v.Inner = &inner{Name: "stale"} // null must clear it
	if err := DecodeJSON("f.json", []byte(data), &v); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(v.Tasks, "|"); got != "a|é😀|q\"\\/\n" {
		t.Errorf("tasks = %q", got)
	}
	if v.Score != -0.0015 || v.Seed != -42 || v.Count != 7 || !v.On || v.Inner != nil {
		t.Errorf("scalars wrong: %+v", v)
	}
	if v.Results["x"] != nil || *v.Results["y"] != 1 || *v.Results["z"] != 0.25 || len(v.Results) != 3 {
		t.Errorf("results = %v", v.Results)
	}
	if v.Items == nil || len(v.Items) != 0 {
		t.Errorf("items = %#v, want empty non-nil", v.Items)
	}
	anys := v.Any.([]any)
	if anys[0] != 1.0 || anys[1] != "two" || anys[2] != nil || anys[3].(map[string]any)["k"] != false {
		t.Errorf("any = %#v", v.Any)
	}
	if !v.When.Equal(time.Date(2026, 11, 22, 3, 12, 33, 0, time.UTC)) {
		t.Errorf("when = %v", v.When)
	}
}

func TestLocate(t *testing.T) {
	data := []byte("{\n  \"tasks\": [\n    \"a\",\n    \"b\"\n  ],\n  \"x\": {\"y\": 1}\n}\n")
	tests := []struct {
		path []string
		want string
	}{
		{nil, "f:1:1"},
		{[]string{"tasks"}, "f:2:12"},
		{[]string{"tasks", "1"}, "f:4:5"},
		{[]string{"tasks", "2"}, "f"},
		{[]string{"x", "y"}, "f:6:14"},
		{[]string{"nope"}, "f"},
	}
	for _, tt := range tests {
		if got := Locate("f", data, tt.path...); got != tt.want {
			t.Errorf("Locate(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
	if got := Locate("f", []byte("{"), "x"); got != "f" {
		t.Errorf("Locate on bad JSON = %q, want f", got)
	}
}

// Expected strings come from CPython 3: json.dumps(v).
func TestPythonFloat(t *testing.T) {
	tenth := 0.1
	tests := []struct {
		v    float64
		want string
	}{
		{0.0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1.0, "1.0"},
		{0.8, "0.8"},
		{0.5, "0.5"},
		{0.1, "0.1"},
		{1.0 / 3, "0.3333333333333333"},
		{2.0 / 3, "0.6666666666666666"},
		{0.7823, "0.7823"},
		{100.0, "100.0"},
		{1e16, "1e+16"},
		{9999999999999998.0, "9999999999999998.0"},
		{1e15, "1000000000000000.0"},
		{123456789012345678.0, "1.2345678901234568e+17"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{1.5e-7, "1.5e-07"},
		{1e22, "1e+22"},
		{1e-300, "1e-300"},
		{5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"},
		{-2.5, "-2.5"},
		{tenth + 2*tenth, "0.30000000000000004"}, // a variable: constants are exact
		{1234567890123456.7, "1234567890123456.8"},
		{12345.678, "12345.678"},
	}
	for _, tt := range tests {
		got, err := PythonFloat(tt.v, 64)
		if err != nil || got != tt.want {
			t.Errorf("PythonFloat(%v) = %q, %v; want %q", tt.v, got, err, tt.want)
		}
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := PythonFloat(bad, 64); err == nil {
			t.Errorf("PythonFloat(%v): no error", bad)
		}
	}
}

func fp(f float64) *float64 { return &f }

func TestEncodeJSON(t *testing.T) {
	type doc struct {
		Tasks       []string            `json:"tasks"`
		Threshold   float64             `json:"threshold"`
		LastResults map[string]*float64 `json:"last_results"`
		E           []int               `json:"e"`
		D           map[string]int      `json:"d"`
		Skip        string              `json:"-"`
		Opt         string              `json:"opt,omitempty"`
		P           *int                `json:"p"`
	}
	v := doc{
		Tasks:       []string{"a", "é", "😀", "x\x7fy", "tab\there", `q"b\s/`},
		Threshold:   0.8,
		LastResults: map[string]*float64{"b": nil, "a": fp(1)},
		Skip:        "never",
	}
	// CPython's json.dumps(..., indent=2) of the same data, keys of
	// last_results sorted, plus the trailing newline.
	want := `{
  "tasks": [
    "a",
    "\u00e9",
    "\ud83d\ude00",
    "x\u007fy",
    "tab\there",
    "q\"b\\s/"
  ],
  "threshold": 0.8,
  "last_results": {
    "a": 1.0,
    "b": null
  },
  "e": [],
  "d": {},
  "p": null
}
`
	got, err := EncodeJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	var back doc
	if err := DecodeJSON("f", got, &back); err != nil {
		t.Fatal(err)
	}
	if strings.Join(back.Tasks, "|") != strings.Join(v.Tasks, "|") || *back.LastResults["a"] != 1 {
		t.Errorf("round trip lost data: %+v", back)
	}

	for name, bad := range map[string]any{
		"nan":  struct{ X float64 }{math.NaN()},
		"func": struct{ F func() }{func() {}},
		"key":  map[int]int{1: 1},
	} {
		if _, err := EncodeJSON(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestEncodeJSONMarshalers(t *testing.T) {
	type doc struct {
		When time.Time `json:"when"`
		Raw  rawJSON   `json:"raw"`
	}
	got, err := EncodeJSON(doc{When: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Raw: rawJSON(`{"a":[1,2]}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"when\": \"2026-01-02T03:04:05Z\",\n  \"raw\": {\n    \"a\": [\n      1,\n      2\n    ]\n  }\n}\n"
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// TestEncodePythonNoNewline: json.dump writes no newline after the value; EncodeJSON, for
// hgate's own files, adds one.
func TestEncodePythonNoNewline(t *testing.T) {
	v := map[string]any{"a": []int{1}, "b": 0.5}
	py, err := EncodePython(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"a\": [\n    1\n  ],\n  \"b\": 0.5\n}"; string(py) != want {
		t.Errorf("EncodePython = %q, want %q", py, want)
	}
	line, err := EncodeJSON(v)
	if err != nil || string(line) != string(py)+"\n" {
		t.Errorf("EncodeJSON = %q, %v; want EncodePython and a newline", line, err)
	}
}

// TestDecodeGoJSON: what encoding/json writes for nil slices and maps (null) reads
// back as nil and writes back the same; every other problem is still reported.
func TestDecodeGoJSON(t *testing.T) {
	type file struct {
		Tasks   []string           `json:"tasks"`
		Results map[string]float64 `json:"results"`
		Next    int                `json:"next"`
	}
	data, _ := json.MarshalIndent(file{Next: 2}, "", "  ")
	var v file
	if err := DecodeGoJSON("f.json", data, &v); err != nil {
		t.Fatal(err)
	}
	if again, _ := json.MarshalIndent(v, "", "  "); string(again) != string(data) {
		t.Errorf("round trip:\n%s\nwant:\n%s", again, data)
	}
	if err := DecodeJSON("f.json", data, &v); err == nil {
		t.Errorf("DecodeJSON took null for an array")
	}
	bad := "{\"tasks\": 1, \"results\": [], \"next\": null,\n\"nxt\": 2}"
	want := "f.json:1:11: tasks: 1 is a number (expected an array or null)\n" +
		"f.json:1:25: results: value is an array (expected an object or null)\n" +
		"f.json:1:37: next: value is null (expected an integer)\n" +
		`f.json:2: unknown field "nxt" (expected one of "tasks", "results", "next")`
	if err := DecodeGoJSON("f.json", []byte(bad), &v); err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

func TestIsTemp(t *testing.T) {
	for name, want := range map[string]bool{
		".results.tsv.tmp-1234567":    true,
		".0123abcd.json.tmp-42":       true,
		"results.tsv.tmp-1":           false, // not hidden
		".results.tsv.tmp-":           false,
		".results.tsv.tmp-12a":        false,
		".tmp-12":                     false, // no NAME
		".keep.tmp-notdigits":         false,
		".pre-commit.tmp123":          false,
		".suite.json.tmp-9.partial":   false,
		".results.tsv.tmp-12-345-678": true, // its maker's pid and start time, then random
		".results.tsv.tmp--12":        false,
	} {
		if got := IsTemp(name); got != want {
			t.Errorf("IsTemp(%q) = %v, want %v", name, got, want)
		}
	}
}

// A temporary file that names its maker is removed only when that maker is gone, however
// old or new it is: a running reader's (hgate report's page) is never taken from under
// it. One that does not name its maker (an older hgate's, go-git's) goes by age.
func TestRemoveStaleByOwner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("start times need /proc")
	}
	me := proc.Self()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := proc.Owner{PID: cmd.ProcessState.Pid(), StartTicks: me.StartTicks}
	dir := t.TempDir()
	start := time.Now()
	old, young := start.Add(-time.Hour), start.Add(time.Hour)
	files := []struct {
		name   string
		mtime  time.Time
		remove bool
	}{
		{".report.html.tmp-" + me.Tag() + "-1", old, false},    // alive: kept, however old
		{".results.tsv.tmp-" + dead.Tag() + "-2", young, true}, // its maker is gone: removed, however new
		{".suite.json.tmp-3", old, true},                       // no maker named: by age
		{".split.json.tmp-4", young, false},
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.mtime, f.mtime); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveStale(dir, IsTemp, start)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, f := range files {
		if f.remove {
			want = append(want, filepath.Join(dir, f.name))
		}
	}
	slices.Sort(removed)
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %q, want %q", removed, want)
	}
	// WriteAtomic's own temporary file names this process.
	if err := WriteAtomic(filepath.Join(dir, "x.json"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, ok := tempOwner(".x.json.tmp-" + me.Tag() + "-99"); !ok {
		t.Error("a WriteAtomic temp name does not parse")
	}
}
