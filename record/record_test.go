package record

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hgate/hgate/internal/golden"
)

func at(h, m, s int) time.Time { return time.Date(2026, 11, 22, h, m, s, 0, time.UTC) }

func TestValidFixtures(t *testing.T) {
	want := map[string]int{"header_only.tsv": 0, "basic.tsv": 2, "no_final_newline.tsv": 1, "crlf_lenient.tsv": 2}
	files, _ := filepath.Glob("testdata/valid/*.tsv")
	if len(files) != len(want) {
		t.Fatalf("found %d fixtures, want %d", len(files), len(want))
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			rows, err := Load(file)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(rows) != want[name] {
				t.Errorf("%d rows, want %d", len(rows), want[name])
			}
			out, err := format(rows)
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(name, out)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := format(back)
			if string(again) != string(out) {
				t.Errorf("formatting is not stable:\n%s\n%s", out, again)
			}
		})
	}
	rows, _ := Load("testdata/valid/crlf_lenient.tsv")
	if got := rows[1].Timestamp; !got.Equal(at(2, 12, 33).Add(123456*time.Microsecond)) || got.Location() != time.UTC {
		t.Errorf("timestamp with +01:00 = %v, want it in UTC", got)
	}
}

func TestInvalidFixtures(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.tsv")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, file := range files {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, _ := os.ReadFile(file)
			rows, err := Parse(name, data)
			if err == nil {
				t.Fatal("no error")
			}
			if rows != nil {
				t.Error("rows returned along with an error")
			}
			golden.Check(t, strings.TrimSuffix(file, ".tsv")+".err", err.Error()+"\n")
		})
	}
}

func TestAppendToGolden(t *testing.T) {
	rows := []Row{
		{0, 0.5, BaselineCommit, 5, 10, at(3, 12, 33)},
		{1, 0.7823, "a1b2c3d", 8, 10, time.Date(2026, 11, 22, 5, 0, 0, 999, time.FixedZone("CET", 3600))},
	}
	var got []byte
	for _, r := range rows {
		var err error
		if got, err = AppendTo("results.tsv", got, r); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := os.ReadFile("testdata/golden/results.tsv")
	if string(got) != string(want) {
		t.Errorf("got:\n%q\nwant:\n%q", got, want)
	}
	back, err := Parse("results.tsv", got)
	if err != nil {
		t.Fatal(err)
	}
	rows[1].Timestamp = at(4, 0, 0) // stored in UTC, to the second
	if !reflect.DeepEqual(back, rows) {
		t.Errorf("Parse(AppendTo(x)) = %+v, want %+v", back, rows)
	}
	if best, ok := Best(back); !ok || best != 0.7823 {
		t.Errorf("Best = %v, %v", best, ok)
	}
}

func TestAppendToKeepsBytes(t *testing.T) {
	tests := []struct {
		name, before, after string
	}{
		{"no final newline", Header + "\n0\t0.5\tbaseline\t5\t10\t2026-11-22T03:12:33Z",
			Header + "\n0\t0.5\tbaseline\t5\t10\t2026-11-22T03:12:33Z\n1\t0.2500\tabcdef0\t1\t4\t2026-11-22T04:00:00+00:00\n"},
		{"crlf", Header + "\r\n0\t0.5\tbaseline\t5\t10\t2026-11-22T03:12:33Z\r\n",
			Header + "\r\n0\t0.5\tbaseline\t5\t10\t2026-11-22T03:12:33Z\r\n1\t0.2500\tabcdef0\t1\t4\t2026-11-22T04:00:00+00:00\r\n"},
	}
	for _, tt := range tests {
		got, err := AppendTo("results.tsv", []byte(tt.before), Row{1, 0.25, "abcdef0", 1, 4, at(4, 0, 0)})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if string(got) != tt.after {
			t.Errorf("%s:\n%q\nwant\n%q", tt.name, got, tt.after)
		}
	}
}

func TestAppendToErrors(t *testing.T) {
	good := []byte(Header + "\n0\t0.5000\tbaseline\t5\t10\t2026-11-22T03:12:33+00:00\n")
	bad := []byte(Header + "\n0\tx\tbaseline\t5\t10\t2026-11-22T03:12:33+00:00\n")
	row := Row{1, 0.5, "abc1234", 1, 2, at(5, 0, 0)}
	tests := []struct {
		name string
		data []byte
		row  Row
		want string
	}{
		{"iteration too high", good, Row{2, 0.5, "abc1234", 1, 2, at(5, 0, 0)}, "append to r.tsv: iteration 2 (expected 1, the number of rows present)"},
		{"iteration repeated", good, Row{0, 0.5, "abc1234", 1, 2, at(5, 0, 0)}, "append to r.tsv: iteration 0 (expected 1, the number of rows present)"},
		{"new file must start at 0", nil, row, "append to r.tsv: iteration 1 (expected 0, the number of rows present)"},
		{"malformed file", bad, row, `r.tsv:2: val_score: "x" is not a number (expected a number from 0 to 1)`},
		{"bad row", good, Row{1, 1.5, "HEAD", 3, 2, time.Time{}}, "append to r.tsv: val_score: 1.5 is outside [0, 1]\n" +
			`commit: "HEAD" is not a commit hash (expected 7 hex digits, or "baseline")` + "\n" +
			"evals_passed: 3 of 2 (expected 0 <= passed <= total)\ntimestamp: not set"},
	}
	for _, tt := range tests {
		before := string(tt.data)
		_, err := AppendTo("r.tsv", tt.data, tt.row)
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s: AppendTo = %v\nwant %s", tt.name, err, tt.want)
		}
		if string(tt.data) != before {
			t.Errorf("%s: data changed on error", tt.name)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.tsv")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load of a missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestBest(t *testing.T) {
	tests := []struct {
		scores []float64
		want   float64
		ok     bool
	}{
		{nil, 0, false},
		{[]float64{0.3}, 0.3, true},
		{[]float64{0.5, 0.9, 0.7}, 0.9, true},
		{[]float64{0, 0}, 0, true},
	}
	for _, tt := range tests {
		var rows []Row
		for i, s := range tt.scores {
			rows = append(rows, Row{Iteration: i, ValScore: s})
		}
		if got, ok := Best(rows); got != tt.want || ok != tt.ok {
			t.Errorf("Best(%v) = %v, %v; want %v, %v", tt.scores, got, ok, tt.want, tt.ok)
		}
	}
}

func TestLearnings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "learnings.md")
	if err := EnsureLearnings(path); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "# Learnings\n\n" {
		t.Errorf("new file = %q", got)
	}
	entries := []Learning{
		{1, 0.5, 0.7823, true, "Parse dates with time.Parse instead of a regexp.", "Tasks 3 and 7 failed on ISO dates.",
			"The stricter parser; caching did nothing.", "  \n", false, "", 0, 0},
		{2, 0.7823, 0.71, false, "Retry on timeout.\nSecond line.\n", "", "", "A larger timeout for task 12.", false, "", 0, 0},
	}
	for _, l := range entries {
		if err := AppendLearning(path, l); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	want, _ := os.ReadFile("testdata/golden/learnings.md")
	if string(got) != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// EnsureLearnings never touches an existing file.
	if err := EnsureLearnings(path); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(want) {
		t.Error("EnsureLearnings changed an existing file")
	}
}

func TestAppendLearningKeepsContent(t *testing.T) {
	dir := t.TempDir()
	entry := Learning{Iteration: 3, Before: 0.1, After: 0.2, Kept: true}.String()
	tests := []struct{ name, before, after string }{
		{"missing file", "", "# Learnings\n\n" + entry},
		{"no final newline", "# Learnings\nmy notes", "# Learnings\nmy notes\n\n" + entry},
		{"blank line already", "# Notes\n\n", "# Notes\n\n" + entry},
		{"extra blank lines kept", "# Learnings\n\n\n\n", "# Learnings\n\n\n\n" + entry},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "_")+".md")
		if tt.before != "" {
			os.WriteFile(path, []byte(tt.before), 0o644)
		}
		if err := AppendLearning(path, Learning{Iteration: 3, Before: 0.1, After: 0.2, Kept: true}); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(path); string(got) != tt.after {
			t.Errorf("%s:\n%q\nwant\n%q", tt.name, got, tt.after)
		}
	}
	link := filepath.Join(dir, "link.md")
	os.Symlink(filepath.Join(dir, "missing_file.md"), link)
	if err := AppendLearning(link, Learning{}); err == nil || !strings.Contains(err.Error(), "it is a symlink") {
		t.Errorf("AppendLearning through a symlink: %v", err)
	}
}

// TestReclaimLearnings: learnings.md left mode 000 by the agent (hgate killed before it
// put the mode back) gets its owner's rights again, by descriptor; a link is not followed.
// (As root the read would go through anyway: attack_chmod_write_set runs as nobody.)
func TestReclaimLearnings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "learnings.md")
	os.WriteFile(path, []byte("# Learnings\n"), 0o644)
	os.Chmod(path, 0)
	if err := reclaim(path); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode())
	}
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, nil, 0o600)
	link := filepath.Join(dir, "link.md")
	os.Symlink(outside, link)
	if err := reclaim(link); err == nil {
		t.Fatal("reclaim followed a link")
	}
	if fi, _ := os.Stat(outside); fi.Mode().Perm() != 0o600 {
		t.Fatalf("the link's target was changed: %v", fi.Mode())
	}
}

func FuzzLoadResults(f *testing.F) {
	for _, pattern := range []string{"testdata/valid/*.tsv", "testdata/invalid/*.tsv"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			data, _ := os.ReadFile(file)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := Parse("results.tsv", data)
		if err != nil {
			return
		}
		out, err := format(rows)
		if err != nil {
			t.Fatalf("loaded rows do not format: %v", err)
		}
		back, err := Parse("results.tsv", out)
		if err != nil {
			t.Fatalf("formatted rows do not load: %v\n%s", err, out)
		}
		if len(back) != len(rows) {
			t.Fatalf("%d rows became %d", len(rows), len(back))
		}
		again, _ := format(back)
		if string(again) != string(out) {
			t.Fatalf("formatting is not stable:\n%q\n%q", out, again)
		}
	})
}

// An entry the gate gave no score says so; the count of entries is what a new run numbers on from.
func TestLearningUnscoredAndCount(t *testing.T) {
	l := Learning{Iteration: 3, Before: 0.42, Unscored: true}
	if got := strings.SplitN(l.String(), "\n", 2)[0]; got != "## Iteration 3 — val_score: 0.42 → not scored ✗" {
		t.Errorf("heading %q", got)
	}
	path := filepath.Join(t.TempDir(), "learnings.md")
	if n := LearningsCount(path); n != 0 {
		t.Errorf("missing file: %d entries", n)
	}
	for i := 1; i <= 2; i++ {
		if err := AppendLearning(path, Learning{Iteration: i}); err != nil {
			t.Fatal(err)
		}
	}
	if n := LearningsCount(path); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
}

// format renders rows as a whole results.tsv, the way the gate builds it: one AppendTo a row.
func format(rows []Row) ([]byte, error) {
	out := []byte(Header + "\n")
	for _, r := range rows {
		var err error
		if out, err = AppendTo("results.tsv", out, r); err != nil {
			return nil, err
		}
	}
	return out, nil
}
