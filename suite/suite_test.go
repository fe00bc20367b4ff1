package suite

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/golden"
)

func fp(f float64) *float64 { return &f }

// parseAny parses a fixture by its name: train_results_* files are
// train_results.json, everything else suite.json. It returns what Marshal
// writes so callers can check the round trip.
func parseAny(name string, data []byte) (any, func([]byte) (any, error), error) {
	if strings.HasPrefix(name, "train_results") {
		reparse := func(b []byte) (any, error) { return ParseTrainResults(name, b) }
		v, err := ParseTrainResults(name, data)
		return v, reparse, err
	}
	reparse := func(b []byte) (any, error) { return Parse(name, b) }
	v, err := Parse(name, data)
	return v, reparse, err
}

func marshal(v any) ([]byte, error) {
	switch v := v.(type) {
	case *Suite:
		return v.Marshal()
	case *TrainResults:
		return v.Marshal()
	}
	panic("unknown type")
}

func TestValidFixturesRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			v, reparse, err := parseAny(name, data)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			out, err := marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			back, err := reparse(out)
			if err != nil {
				t.Fatalf("saved output does not load: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(v, back) {
				t.Errorf("round trip changed the value:\n%+v\n%+v", v, back)
			}
		})
	}
}

func TestInvalidFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = parseAny(name, data)
			if err == nil {
				t.Fatal("no error")
			}
			golden.Check(t, strings.TrimSuffix(file, ".json")+".err", err.Error()+"\n")
		})
	}
}

func TestMarshalGolden(t *testing.T) {
	s := New(0.8)
	s.Promote("task_042", "task_001", "task_007")
	s.LastResults = map[string]*float64{"task_042": fp(0.25), "task_001": fp(1), "task_007": nil}
	tr := NewTrainResults(map[string]*float64{"a": fp(1), "b": fp(0), "c": nil, "d": fp(0.5)},
		time.Date(2026, 11, 22, 4, 12, 33, 0, time.FixedZone("CET", 3600)))
	tests := []struct {
		golden  string
		marshal func() ([]byte, error)
		parse   func(string, []byte) (any, error)
		value   any
	}{
		{"suite.json", s.Marshal, func(f string, d []byte) (any, error) { return Parse(f, d) }, &Suite{Tasks: s.Tasks, Threshold: s.Threshold,
			LastResults: map[string]*float64{"task_042": fp(0.25), "task_001": fp(1)}}}, // the null is left out
		{"train_results.json", tr.Marshal, func(f string, d []byte) (any, error) { return ParseTrainResults(f, d) }, tr},
	}
	for _, tt := range tests {
		got, err := tt.marshal()
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata/golden", tt.golden))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s:\n%s\nwant (written by Python's json.dump):\n%s", tt.golden, got, want)
		}
		back, err := tt.parse(tt.golden, got)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, tt.value) {
			t.Errorf("%s: Parse(Marshal(x)) = %+v, want %+v", tt.golden, back, tt.value)
		}
	}
}

func TestLoadMissing(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "suite.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load: %v, want fs.ErrNotExist", err)
	}
	if _, err := LoadTrainResults(filepath.Join(dir, "train_results.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadTrainResults: %v, want fs.ErrNotExist", err)
	}
}

func TestMarshalRefuses(t *testing.T) {
	tests := []struct {
		s    *Suite
		want string
	}{
		{&Suite{Tasks: []string{"a", "a"}, Threshold: 2}, "threshold: 2.0 is outside [0, 1] (expected a pass-rate fraction such as 0.8)\n" +
			`tasks[1]: duplicate task id "a" (first at tasks[0])`},
		{&Suite{Tasks: []string{}, LastResults: map[string]*float64{"a": fp(1.5)}}, "last_results.a: reward 1.5 is outside [0, 1] (expected a number from 0 to 1, or null)"},
	}
	for _, tt := range tests {
		if _, err := tt.s.Marshal(); err == nil || err.Error() != tt.want {
			t.Errorf("Marshal = %v, want %q", err, tt.want)
		}
	}
	tr := &TrainResults{Split: "test", Timestamp: "t"}
	if _, err := tr.Marshal(); err == nil || err.Error() != `split: "test" is not the train split (expected "train" or null)` {
		t.Errorf("TrainResults.Marshal = %v", err)
	}
}

func TestPromote(t *testing.T) {
	tests := []struct {
		have, promote, wantAdded, wantTasks []string
	}{
		{nil, nil, nil, nil},
		{[]string{"b"}, []string{"c", "a", "b", "a", ""}, []string{"a", "c"}, []string{"a", "b", "c"}},
		{[]string{"a", "b"}, []string{"b", "a"}, nil, []string{"a", "b"}},
		{[]string{}, []string{"z", "y"}, []string{"y", "z"}, []string{"y", "z"}},
	}
	for _, tt := range tests {
		s := New(0.8)
		s.Tasks = slices.Clone(tt.have)
		added := s.Promote(tt.promote...)
		if !slices.Equal(added, tt.wantAdded) {
			t.Errorf("Promote(%q) on %q added %q, want %q", tt.promote, tt.have, added, tt.wantAdded)
		}
		if !slices.Equal(s.Tasks, tt.wantTasks) {
			t.Errorf("Promote(%q) on %q: tasks %q, want %q", tt.promote, tt.have, s.Tasks, tt.wantTasks)
		}
	}
}

func TestScore(t *testing.T) {
	results := map[string]*float64{"a": fp(1), "b": fp(0.5), "c": fp(0.49), "d": nil, "x": fp(1)}
	tests := []struct {
		tasks       []string
		threshold   float64
		passed, tot int
		failing     []string
		pass        bool
	}{
		{nil, 0.8, 0, 0, nil, true}, // an empty suite passes
		{[]string{"a", "b"}, 1, 2, 2, nil, true},
		{[]string{"a", "b", "c", "d", "e"}, 0.4, 2, 5, []string{"c", "d", "e"}, true}, // 2/5 == 0.4 exactly
		{[]string{"a", "b", "c", "d", "e"}, 0.41, 2, 5, []string{"c", "d", "e"}, false},
		{[]string{"e"}, 0, 0, 1, []string{"e"}, true}, // missing counts as failed
		{[]string{"a", "b", "c", "d", "missing"}, 0.8, 2, 5, []string{"c", "d", "missing"}, false},
	}
	for _, tt := range tests {
		s := &Suite{Tasks: tt.tasks, Threshold: tt.threshold}
		p, n := s.Score(results)
		if p != tt.passed || n != tt.tot {
			t.Errorf("%q: Score = %d/%d, want %d/%d", tt.tasks, p, n, tt.passed, tt.tot)
		}
		if f := s.Failing(results); !slices.Equal(f, tt.failing) {
			t.Errorf("%q: Failing = %q, want %q", tt.tasks, f, tt.failing)
		}
		if got := s.Pass(results); got != tt.pass {
			t.Errorf("%q threshold %v: Pass = %v, want %v", tt.tasks, tt.threshold, got, tt.pass)
		}
	}
}

func TestPassed(t *testing.T) {
	tests := []struct {
		r    *float64
		want bool
	}{{nil, false}, {fp(0), false}, {fp(0.4999), false}, {fp(0.5), true}, {fp(1), true}}
	for _, tt := range tests {
		if got := Passed(tt.r); got != tt.want {
			t.Errorf("Passed(%v) = %v", tt.r, got)
		}
	}
}

func TestRecordResults(t *testing.T) {
	s := &Suite{Tasks: []string{"a", "b"}, LastResults: map[string]*float64{"old": fp(1)}}
	in := map[string]*float64{"a": fp(0.75), "other": fp(1)}
	s.RecordResults(in)
	*in["a"] = 0 // the suite keeps its own copy
	if len(s.LastResults) != 2 || *s.LastResults["a"] != 0.75 || s.LastResults["b"] != nil {
		t.Errorf("LastResults = %v", s.LastResults)
	}
	if _, ok := s.LastResults["b"]; !ok {
		t.Error("a suite task without a result must be recorded as null")
	}
}

func TestTrainResultsFailing(t *testing.T) {
	tr := NewTrainResults(map[string]*float64{"c": nil, "a": fp(0.2), "b": fp(0.5)}, time.Unix(0, 0))
	if got := tr.Failing(); !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("Failing = %q", got)
	}
	if tr.Timestamp != "1970-01-01T00:00:00+00:00" {
		t.Errorf("Timestamp = %q", tr.Timestamp)
	}
}

func fuzzSeeds(f *testing.F) {
	for _, pattern := range []string{"testdata/valid/*.json", "testdata/invalid/*.json", "testdata/golden/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}

func FuzzLoadSuite(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("suite.json", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("a loaded suite does not save: %v", err)
		}
		back, err := Parse("suite.json", out)
		if err != nil {
			t.Fatalf("saved suite does not load: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(s, back) {
			t.Fatalf("round trip changed the suite:\n%+v\n%+v", s, back)
		}
		if again, _ := back.Marshal(); string(again) != string(out) {
			t.Fatalf("second save differs:\n%s\n%s", out, again)
		}
	})
}

func FuzzLoadTrainResults(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTrainResults("train_results.json", data)
		if err != nil {
			return
		}
		out, err := tr.Marshal()
		if err != nil {
			t.Fatalf("loaded train results do not save: %v", err)
		}
		back, err := ParseTrainResults("train_results.json", out)
		if err != nil || !reflect.DeepEqual(tr, back) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, tr, back)
		}
	})
}
