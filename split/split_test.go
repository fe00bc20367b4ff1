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
