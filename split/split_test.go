package split

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/golden"
)

func fp(f float64) *float64 { return &f }

func TestValidFixturesRoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, _ := os.ReadFile(file)
			s, err := Parse(name, data)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !slices.IsSorted(s.Train) || !slices.IsSorted(s.Test) {
				t.Errorf("lists not sorted: %+v", s)
			}
			out, err := s.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(name, out)
			if err != nil || !reflect.DeepEqual(s, back) {
				t.Errorf("round trip: %v\n%+v\n%+v", err, s, back)
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
			data, _ := os.ReadFile(file)
			_, err := Parse(name, data)
			if err == nil {
				t.Fatal("no error")
			}
			golden.Check(t, strings.TrimSuffix(file, ".json")+".err", err.Error()+"\n")
		})
	}
}

func TestMarshalGolden(t *testing.T) {
	s := &Split{Seed: 42, Train: []string{"d", "a", "b"}, Test: []string{"e", "c"}}
	got, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile("testdata/golden/split.json")
	if string(got) != string(want) {
		t.Errorf("got:\n%s\nwant (written by Python's json.dump):\n%s", got, want)
	}
	back, err := Parse("split.json", got)
	if err != nil {
		t.Fatal(err)
	}
	if want := (&Split{Seed: 42, Train: []string{"a", "b", "d"}, Test: []string{"c", "e"}}); !reflect.DeepEqual(back, want) {
		t.Errorf("Parse(Marshal(x)) = %+v, want %+v", back, want)
	}
}

func TestLoadMarshalErrors(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "split.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file: %v, want fs.ErrNotExist", err)
	}
	bad := &Split{Train: []string{"a"}, Test: []string{"a"}}
	want := `test[0]: "a" is also in train[0] (expected each task in one split)`
	if _, err := bad.Marshal(); err == nil || err.Error() != want {
		t.Errorf("Marshal = %v, want %q", err, want)
	}
}

// baseline builds n passing and m failing tasks plus the given null ones.
func baseline(pass, fail int, null ...string) map[string]*float64 {
	b := map[string]*float64{}
	for i := range pass {
		b[fmt.Sprintf("p%02d", i)] = fp(1)
	}
	for i := range fail {
		b[fmt.Sprintf("f%02d", i)] = fp(0.25)
	}
	for _, id := range null {
		b[id] = nil
	}
	return b
}

func count(ids []string, prefix string) int {
	n := 0
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			n++
		}
	}
	return n
}

func TestMake(t *testing.T) {
	tests := []struct {
		name                      string
		baseline                  map[string]*float64
		fraction                  float64
		testPass, testFail, train int
		excluded                  []string
	}{
		{"stratified", baseline(10, 20), 0.3, 3, 6, 21, nil},
		{"rounds half away from zero", baseline(5, 5), 0.3, 2, 2, 6, nil}, // 1.5 → 2
		{"nulls excluded", baseline(4, 4, "n2", "n1"), 0.5, 2, 2, 4, []string{"n1", "n2"}},
		{"at least one test task", baseline(2, 1), 0.1, 1, 0, 2, nil},
		{"at least one train task", baseline(1, 1), 0.9, 1, 0, 1, nil}, // a tie gives back the failing one
		{"one task stays in train", baseline(1, 0), 0.3, 0, 0, 1, nil},
		{"nothing", baseline(0, 0, "n"), 0.3, 0, 0, 0, []string{"n"}},
		{"fraction clamped", baseline(3, 3), 7, 3, 2, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, excluded := Make(tt.baseline, tt.fraction, 42)
			if got := count(s.Test, "p"); got != tt.testPass {
				t.Errorf("passing tasks in test = %d, want %d (%+v)", got, tt.testPass, s)
			}
			if got := count(s.Test, "f"); got != tt.testFail {
				t.Errorf("failing tasks in test = %d, want %d (%+v)", got, tt.testFail, s)
			}
			if len(s.Train) != tt.train {
				t.Errorf("train has %d tasks, want %d", len(s.Train), tt.train)
			}
			if !slices.Equal(excluded, tt.excluded) {
				t.Errorf("excluded = %q, want %q", excluded, tt.excluded)
			}
			if !slices.IsSorted(s.Train) || !slices.IsSorted(s.Test) || s.Seed != 42 || s.Train == nil || s.Test == nil {
				t.Errorf("split not sorted, seeded and non-nil: %+v", s)
			}
			all := append(slices.Clone(s.Train), s.Test...)
			slices.Sort(all)
			if len(slices.Compact(all)) != len(tt.baseline)-len(tt.excluded) {
				t.Errorf("tasks lost or repeated: %+v", s)
			}
		})
	}
}

func TestMakeDeterministic(t *testing.T) {
	b := baseline(12, 12)
	first, _ := Make(b, 0.3, 42)
	again, _ := Make(b, 0.3, 42)
	if !reflect.DeepEqual(first, again) {
		t.Errorf("same seed, different splits:\n%+v\n%+v", first, again)
	}
	// Pinned: split.json is made once, but a new hgate must make the same
	// split from the same baseline and seed.
	want := []string{"f00", "f02", "f05", "f08", "p02", "p05", "p08", "p11"}
	if !slices.Equal(first.Test, want) {
		t.Errorf("seed 42 test split = %q, want %q", first.Test, want)
	}
	other, _ := Make(b, 0.3, 7)
	if slices.Equal(other.Test, first.Test) {
		t.Errorf("seeds 42 and 7 gave the same test split %q", first.Test)
	}
}

func FuzzLoadSplit(f *testing.F) {
	for _, pattern := range []string{"testdata/valid/*.json", "testdata/invalid/*.json"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, _ := os.ReadFile(file)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("split.json", data)
		if err != nil {
			return
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("a loaded split does not save: %v", err)
		}
		back, err := Parse("split.json", out)
		if err != nil || !reflect.DeepEqual(s, back) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, s, back)
		}
	})
}

const sealedSHA = "hmac-sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// TestSealedFinalNotListedApart: with a sealed final split, split.json's test list holds
// the test and final ids together, sorted, and nothing else in the file tells them apart;
// Unseal, given the record's ids, gives back the test split alone.
func TestSealedFinalNotListedApart(t *testing.T) {
	s := &Split{Seed: 1, Train: []string{"a", "b"}, Test: []string{"d", "f"}, Final: []string{"e", "c"}, FinalSHA: sealedSHA, FinalTasks: 2}
	data, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "seed": 1,
  "train": [
    "a",
    "b"
  ],
  "test": [
    "c",
    "d",
    "e",
    "f"
  ],
  "final_sha": "` + sealedSHA + `",
  "final_tasks": 2,
  "format": 2
}
`
	if string(data) != want {
		t.Fatalf("split.json:\n%s\nwant:\n%s", data, want)
	}
	back := readSealed(t, data)
	if err := back.Unseal([]string{"e", "c"}); err != nil {
		t.Fatal(err)
	}
	if back.held != nil || !slices.Equal(back.Test, []string{"d", "f"}) || !slices.Equal(back.Final, []string{"c", "e"}) || back.TestCount() != 2 {
		t.Fatalf("unsealed: test %q, final %q", back.Test, back.Final)
	}
	if again, err := back.Marshal(); err != nil || string(again) != want {
		t.Fatalf("an unsealed split is not written as read: %v\n%s", err, again)
	}
}

// readSealed parses a sealed split.json: its test split stays empty until Unseal, and it is
// written back as it was read.
func readSealed(t *testing.T, data []byte) *Split {
	t.Helper()
	s, err := Parse("split.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if s.held == nil || s.Test != nil || s.Final != nil || s.TestCount() != 2 {
		t.Fatalf("read back before Unseal: sealed %v, test %q, final %q, count %d", s.held != nil, s.Test, s.Final, s.TestCount())
	}
	if again, err := s.Marshal(); err != nil || string(again) != string(data) {
		t.Fatalf("a sealed split not unsealed is not written as read: %v\n%s", err, again)
	}
	return s
}

// TestUnsealRefusals: a record that does not agree with split.json is an error saying how.
func TestUnsealRefusals(t *testing.T) {
	sealed := func() *Split {
		s, err := Parse("split.json", []byte(`{"seed": 1, "train": ["a"], "test": ["b", "c", "d"], "final_sha": "`+sealedSHA+`", "final_tasks": 2, "format": 2}`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	old := func() *Split {
		s, err := Parse("split.json", []byte(`{"seed": 1, "train": ["a"], "test": ["b"], "final_sha": "`+sealedSHA+`", "final_tasks": 2}`))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, tt := range []struct {
		name  string
		s     *Split
		final []string
		want  string
	}{
		{"count", sealed(), []string{"c"}, "final_tasks is 2, but the sealed record names 1 final tasks"},
		{"not in test", sealed(), []string{"c", "x"}, `final task "x" of the sealed record is not in the test list`},
		{"old format, listed", old(), []string{"b", "c"}, `final task "b" is also listed as a train or test task`},
		{"no record", &Split{Train: []string{"a"}, Test: []string{"b"}}, []string{"c"}, "has no final_sha, but 1 final ids were given"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.s.Unseal(tt.final); err == nil || err.Error() != tt.want {
				t.Errorf("Unseal(%q) = %v, want %q", tt.final, err, tt.want)
			}
		})
	}
}

// TestOldFormatFinalKept: a split.json written before FormatSealed (its test list the test
// split alone, the final ids in no list) is read as it was written, never as a sealed
// list, and its final ids, once unsealed, leave its test split as it was.
func TestOldFormatFinalKept(t *testing.T) {
	data, err := os.ReadFile("testdata/valid/final_before_format.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("split.json", data)
	if err != nil {
		t.Fatal(err)
	}
	if s.held != nil || s.Format != 0 || !slices.Equal(s.Test, []string{"t3", "t4"}) || s.TestCount() != 2 {
		t.Fatalf("old format read as %+v", s)
	}
	if err := s.Unseal([]string{"t6", "t5"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Test, []string{"t3", "t4"}) || !slices.Equal(s.Final, []string{"t5", "t6"}) {
		t.Fatalf("old format unsealed: test %q, final %q", s.Test, s.Final)
	}
}
