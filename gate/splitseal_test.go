package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hgate/hgate/internal/digest"
	"github.com/hgate/hgate/split"
)

// sealedWorkspace seals a final record of final's ids in a vault of its own and writes a
// split.json naming it: the test list holding test and final together, as prepare writes
// it. It returns the vault, split.json's path and the record's path.
func sealedWorkspace(t *testing.T, test, final []string) (vault, string, string) {
	t.Helper()
	common := t.TempDir()
	v := vault{dir: filepath.Join(common, "hgate", "heldout"), common: common, key: func() (*digest.Key, error) { return digest.Create(common) }}
	trials := Trials{}
	for _, id := range final {
		trials[id] = []*float64{reward(1)}
	}
	sum, err := sealTrials(v, trials)
	if err != nil {
		t.Fatal(err)
	}
	sp := &split.Split{Seed: 1, Train: []string{"a01", "a02"}, Test: test, Final: final, FinalSHA: sum, FinalTasks: len(final)}
	data, err := sp.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "split.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return v, path, filepath.Join(v.dir, digest.Hex(sum)+".json")
}

// TestOpenSplitUnseals: every gate reader gets the test split alone from a split.json whose
// test list holds the final ids too, and the final ids from the sealed record.
func TestOpenSplitUnseals(t *testing.T) {
	v, path, _ := sealedWorkspace(t, []string{"t2", "t4"}, []string{"t3", "t1"})
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"test": [
    "t1",
    "t2",
    "t3",
    "t4"
  ]`) || strings.Contains(string(raw), `"final":`) {
		t.Fatalf("split.json tells the final ids apart:\n%s", raw)
	}
	sp, err := openSplit(v, path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sp.Test, ",") != "t2,t4" || strings.Join(sp.Final, ",") != "t1,t3" {
		t.Fatalf("test %q, final %q", sp.Test, sp.Final)
	}
}

// TestOpenSplitRecordFaults: a sealed record that is missing or changed is an error naming
// split.json and the record, never a test split silently holding the final tasks.
func TestOpenSplitRecordFaults(t *testing.T) {
	for _, tt := range []struct {
		name  string
		spoil func(t *testing.T, v vault, record string)
		want  string
	}{
		{"missing", func(t *testing.T, _ vault, record string) {
			if err := os.Remove(record); err != nil {
				t.Fatal(err)
			}
		}, "the held-out record %s is missing"},
		{"changed", func(t *testing.T, _ vault, record string) {
			if err := os.WriteFile(record, []byte(`{"t1": [1.0], "t3": [0.0]}`), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "the held-out record %s does not match its digest"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, path, record := sealedWorkspace(t, []string{"t2", "t4"}, []string{"t1", "t3"})
			tt.spoil(t, v, record)
			sp, err := openSplit(v, path)
			want := strings.ReplaceAll(tt.want, "%s", record)
			if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), want) {
				t.Fatalf("openSplit = %+v, %v; want an error naming %s and %q", sp, err, path, want)
			}
		})
	}
}

// TestOpenSplitRecordDisagrees: a record that matches its digest but names ids the
// file's test list does not hold is an error naming both files.
func TestOpenSplitRecordDisagrees(t *testing.T) {
	v, path, record := sealedWorkspace(t, []string{"t2", "t4"}, []string{"t1", "t3"})
	sum, err := sealTrials(v, Trials{"t1": {reward(1)}, "t9": {reward(0)}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	old := digest.Hex(filepath.Base(strings.TrimSuffix(record, ".json")))
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(raw), old, digest.Hex(sum))), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = openSplit(v, path)
	if err == nil || !strings.HasPrefix(err.Error(), path+": ") || !strings.Contains(err.Error(), `final task "t9" of the sealed record is not in the test list`) || !strings.Contains(err.Error(), digest.Hex(sum)+".json") {
		t.Fatalf("openSplit = %v", err)
	}
}

// TestOpenSplitOldFormat: a split.json written before the final ids were listed among the
// test ids loads as it was written: its test split as listed, its final ids from the record.
func TestOpenSplitOldFormat(t *testing.T) {
	v, _, record := sealedWorkspace(t, []string{"t2", "t4"}, []string{"t1", "t3"})
	sum := "hmac-sha256:" + strings.TrimSuffix(filepath.Base(record), ".json")
	path := filepath.Join(t.TempDir(), "split.json")
	old := `{"seed": 1, "train": ["a01", "a02"], "test": ["t2", "t4"], "final_sha": "` + sum + `", "final_tasks": 2}`
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	sp, err := openSplit(v, path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(sp.Test, ",") != "t2,t4" || strings.Join(sp.Final, ",") != "t1,t3" {
		t.Fatalf("test %q, final %q", sp.Test, sp.Final)
	}
}

// TestBenchRefusesFinalAsTest: hgate bench refuses a final id in the words, and so with
// the exit code, it refuses a test id with: split.json lists both as test ids.
func TestBenchRefusesFinalAsTest(t *testing.T) {
	sp := &split.Split{Train: []string{"a01"}, Test: []string{"t2"}, Final: []string{"t1"}, FinalSHA: "hmac-sha256:x", FinalTasks: 1}
	_, errTest := benchTasks(sp, []string{"t2"}, "split.json")
	_, errFinal := benchTasks(sp, []string{"t1"}, "split.json")
	if errTest == nil || errFinal == nil {
		t.Fatalf("not refused: test %v, final %v", errTest, errFinal)
	}
	if a, b := strings.ReplaceAll(errTest.Error(), "t2", "ID"), strings.ReplaceAll(errFinal.Error(), "t1", "ID"); a != b {
		t.Errorf("a final id is refused otherwise than a test id:\n%s\n%s", b, a)
	}
}
